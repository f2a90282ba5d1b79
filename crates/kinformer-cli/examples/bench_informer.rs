//! Runs the informer workload (W6) once and prints `workload metric value unit` rows.
//! Usage: `cargo run --release -p kinformer-cli --example bench_informer`

#[path = "../src/bench/informer.rs"]
mod informer;

fn main() {
    for w in informer::WORKLOADS {
        match informer::run(w) {
            Ok(rows) => {
                for (metric, value, unit) in rows {
                    println!("{w}  {metric}  {value:.1}  {unit}");
                }
            }
            Err(e) => {
                eprintln!("{w}: {e}");
                std::process::exit(1);
            }
        }
    }
}
