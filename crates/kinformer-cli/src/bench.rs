//! `kinformer bench ARGS...`: runs the benchmark runner, `kinformer-bench ARGS...` (its own
//! binary, because its heap figures need a counting global allocator that this one does not
//! install), found beside this binary or on `PATH`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

use clap::Args;

/// Options of `kinformer bench`: everything is passed to `kinformer-bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The runner's arguments: a group (`workqueue`, `cache`, `informer`, `sharding`, `soak`,
    /// `all`) and its options (`--runs N`, `--only ID`, `--json`, `--plot FILE`), or `plot ...`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    args: Vec<OsString>,
}

/// The runner's name, with the platform's executable suffix.
fn runner_name() -> String {
    format!("kinformer-bench{}", std::env::consts::EXE_SUFFIX)
}

/// `kinformer-bench` beside this binary (as cargo builds both into one directory), else the
/// bare name, for `PATH` to resolve.
fn runner() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(runner_name())))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(runner_name()))
}

/// Runs the runner; its exit status is ours.
pub fn run(args: BenchArgs) -> i32 {
    let runner = runner();
    match Command::new(&runner).args(&args.args).status() {
        Ok(status) => status.code().unwrap_or(1),
        Err(e) => {
            eprintln!(
                "error: kinformer bench runs {} ({e}); build it with \
                 `cargo build --release -p kinformer-bench` (it lands beside this binary)",
                runner.display()
            );
            1
        }
    }
}
