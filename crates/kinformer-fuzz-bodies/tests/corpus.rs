//! Runs every file of the fuzz corpora (`fuzz/corpus/<target>/`) through the fuzz targets'
//! bodies (this crate), so that the targets keep compiling and the corpora keep passing in the
//! default test suite, without nightly or libFuzzer.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use kinformer_fuzz_bodies as targets;

use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../fuzz/corpus/{target}"));
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "empty corpus {}", dir.display());
    files
}

fn run(target: &str, body: fn(&[u8])) {
    for (path, bytes) in corpus(target) {
        let result = std::panic::catch_unwind(|| body(&bytes));
        assert!(result.is_ok(), "{target}: {} panicked", path.display());
    }
}

#[test]
fn watch_frame_corpus() {
    run("watch_frame", targets::watch_frame);
}

#[test]
fn list_body_corpus() {
    run("list_body", targets::list_body);
}

#[test]
fn selectors_corpus() {
    run("selectors", targets::selectors);
}

#[test]
fn query_corpus() {
    run("query", targets::query);
}

#[test]
fn request_body_corpus() {
    run("request_body", targets::request_body);
}
