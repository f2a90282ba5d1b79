//! The fuzz targets' bodies live in `crates/kinformer-fuzz-bodies`, a member of the main
//! workspace, whose test runs every corpus file through them on stable Rust.

pub use kinformer_fuzz_bodies::*;
