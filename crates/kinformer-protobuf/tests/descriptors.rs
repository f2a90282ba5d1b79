//! `proto/descriptors.bin` is the compilation of the vendored `.proto` files.
//!
//! Regenerate it after re-vendoring with `KINFORMER_WRITE_DESCRIPTORS=1 cargo test -p
//! kinformer-protobuf --test descriptors`.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use prost::Message;

fn protos(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            protos(&p, out);
        } else if p.extension().is_some_and(|e| e == "proto") {
            out.push(p);
        }
    }
}

#[test]
fn descriptors_bin_is_the_compiled_vendored_protos() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("proto");
    let mut files = Vec::new();
    protos(&root.join("k8s.io"), &mut files);
    assert!(files.len() > 50, "{} proto files", files.len());
    let names: Vec<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(&root).unwrap().to_owned())
        .collect();
    let set = protox::Compiler::new([&root])
        .unwrap()
        .include_imports(true)
        .include_source_info(false)
        .open_files(&names)
        .unwrap()
        .file_descriptor_set();
    let bytes = set.encode_to_vec();
    let path = root.join("descriptors.bin");
    if std::env::var_os("KINFORMER_WRITE_DESCRIPTORS").is_some() {
        std::fs::write(&path, &bytes).unwrap();
    }
    let committed = std::fs::read(&path).unwrap();
    assert!(
        committed == bytes,
        "proto/descriptors.bin is stale: regenerate it (see this file's docs)"
    );
}
