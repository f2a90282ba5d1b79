//! Criterion benches for the workqueue (filled in below).
fn main() {}
