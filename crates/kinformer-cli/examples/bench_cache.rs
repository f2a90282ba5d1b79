//! Runs the cache workloads (W4, W5) once and prints `workload metric value unit` rows.
//! Usage: `cargo run --release -p kinformer-cli --example bench_cache [W4|W5]...`

// Declared at the crate root so that `super::alloc` inside cache.rs resolves as it will
// under `bench/`.
#[path = "../src/bench/alloc.rs"]
mod alloc;
#[path = "../src/bench/cache.rs"]
mod cache;

#[global_allocator]
static ALLOC: alloc::CountingAlloc = alloc::CountingAlloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let workloads: Vec<&str> = if args.is_empty() {
        cache::WORKLOADS.to_vec()
    } else {
        args.iter().map(String::as_str).collect()
    };
    for w in workloads {
        match cache::run(w) {
            Ok(rows) => {
                for (metric, value, unit) in rows {
                    println!("{w}  {metric}  {value:.3}  {unit}");
                }
            }
            Err(e) => eprintln!("{w}: {e}"),
        }
    }
}
