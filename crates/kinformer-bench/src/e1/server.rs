//! The bench server: the embedded API server in a process of its own, seeded with bench or
//! realistic pods, driven by commands on its stdin (see the module docs of `e1`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use kinformer_apiserver::watch::WatchChunkCounts;
use kinformer_apiserver::{
    ApiServer, Fault, FaultRule, ServerConfig, bench_pod_update, seed_bench_pods,
};
use kube::Client;

use super::{WRITTEN_AT, now_us};
use crate::realistic::RealisticPods;

/// The formats the bench server encodes each object in at the write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encode {
    /// JSON only (protobuf, if asked for, at the first protobuf read).
    Json,
    /// JSON and protobuf: for every bench-pod E1 row, whatever its client reads, so that the
    /// rows measure their client against the same server work (see the module docs).
    JsonAndProtobuf,
}

/// The server child process and its command pipe.
pub(crate) struct ServerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    pub(crate) url: String,
}

impl ServerProcess {
    pub(crate) fn spawn(pods: usize, realistic: bool, encode: Encode) -> Result<Self, String> {
        Self::spawn_with(pods, realistic, encode, false, true)
    }

    /// [`spawn`](Self::spawn), answering lists at resourceVersion "0" in one response if
    /// `watch_cache`, as a real API server's watch cache does; a 1.26 server (`watch_list`
    /// false) also refuses watch-lists, a 1.32 or 1.34 one serves them.
    pub(super) fn spawn_with(
        pods: usize,
        realistic: bool,
        encode: Encode,
        watch_cache: bool,
        watch_list: bool,
    ) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
        let mut args = vec!["server".to_string(), "--pods".into(), pods.to_string()];
        if watch_cache {
            args.push("--watch-cache-lists".into());
        }
        if !watch_list {
            args.push("--no-watch-list".into());
        }
        if realistic {
            args.push("--realistic".into());
        }
        if encode == Encode::JsonAndProtobuf {
            args.push("--protobuf".into());
        }
        let mut command = Command::new(exe);
        command.env_remove("TOKIO_WORKER_THREADS");
        if let Some(workers) = std::env::var_os("KINFORMER_BENCH_SERVER_WORKERS") {
            command.env("TOKIO_WORKER_THREADS", workers);
        }
        let mut child = command
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("spawning the server: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no server stdout")?;
        let mut server = Self {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            url: String::new(),
        };
        let line = server.read_line()?;
        server.url = line
            .strip_prefix("url ")
            .ok_or_else(|| format!("unexpected server line {line:?}"))?
            .trim()
            .to_string();
        Ok(server)
    }

    pub(super) fn read_line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        let n = self
            .stdout
            .read_line(&mut line)
            .map_err(|e| format!("reading the server: {e}"))?;
        if n == 0 {
            return Err("the server process ended".into());
        }
        Ok(line)
    }

    pub(super) fn command(&mut self, cmd: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("server stdin closed")?;
        writeln!(stdin, "{cmd}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("writing to the server: {e}"))
    }

    /// The server's watch chunk counts so far (the `chunks` command).
    pub(super) fn watch_chunks(&mut self) -> Result<WatchChunkCounts, String> {
        self.command("chunks")?;
        let line = self.read_line()?;
        line.strip_prefix("chunks ")
            .and_then(|json| serde_json::from_str(json).ok())
            .ok_or_else(|| format!("unexpected server line {line:?}"))
    }

    pub(super) fn client(&self) -> Result<Client, String> {
        let uri = self
            .url
            .parse()
            .map_err(|e| format!("server url {:?}: {e}", self.url))?;
        Client::try_from(kube::Config::new(uri)).map_err(|e| format!("kube client: {e}"))
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // End of stdin ends the server; kill it in case it is stuck.
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `kinformer-bench server`: the server side of the E1 and L0 workloads (see the module
/// documentation). Returns the process exit code.
pub fn serve_for_bench(
    pods: usize,
    realistic: bool,
    protobuf: bool,
    watch_cache: bool,
    no_watch_list: bool,
) -> i32 {
    exit_code(
        tokio::runtime::Builder::new_multi_thread(),
        "bench server",
        bench_server(pods, realistic, protobuf, watch_cache, no_watch_list),
    )
}

/// Runs `f` to its end on a runtime from `builder`, as a child process's main: exit code 0, or
/// 1 after printing `what` and the error.
pub(crate) fn exit_code(
    mut builder: tokio::runtime::Builder,
    what: &str,
    f: impl Future<Output = Result<(), String>>,
) -> i32 {
    let rt = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return 1;
        }
    };
    match rt.block_on(f) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {what}: {e}");
            1
        }
    }
}

/// Realistic pod `i` as an update body: the generator's JSON without the server-assigned
/// `uid` and `resourceVersion` (an unconditional replace), with `round` in an annotation.
fn realistic_update(json: &str, round: u64) -> Result<serde_json::Value, String> {
    let mut pod: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    if let Some(meta) = pod.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("uid");
        meta.remove("resourceVersion");
    }
    pod["spec"]["containers"][0]["env"] =
        serde_json::json!([{"name": "ROUND", "value": round.to_string()}]);
    Ok(pod)
}

/// Seeds `pods` realistic pods through the store's create path.
fn seed_realistic(server: &ApiServer, pods: usize) -> Result<(), String> {
    let mut generator = RealisticPods::new();
    for i in 0..pods {
        let pod: serde_json::Value =
            serde_json::from_str(&generator.json(i)).map_err(|e| e.to_string())?;
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        server
            .store()
            .create("pods", &ns, pod)
            .map_err(|e| format!("realistic pod {i}: {e}"))?;
    }
    Ok(())
}

async fn bench_server(
    pods: usize,
    realistic: bool,
    protobuf: bool,
    watch_cache: bool,
    no_watch_list: bool,
) -> Result<(), String> {
    let mut config = ServerConfig::default()
        .with_watch_cache_lists(watch_cache)
        .with_no_watch_list(no_watch_list);
    // Room for every update in the history, so that a lagging watch is never expired.
    config.store.max_events = 3 * pods.max(1);
    // With `--protobuf` (every bench-pod E1 row) objects are encoded in protobuf at the write,
    // as in JSON, so that the rows measure their client and not the server's encoding (see
    // the module docs).
    config.store.encode_protobuf = protobuf;
    let server = ApiServer::start_with(config)
        .await
        .map_err(|e| e.to_string())?;
    let build_round = |round: u64| -> Result<Vec<serde_json::Value>, String> {
        if realistic {
            let mut generator = RealisticPods::new();
            (0..pods)
                .map(|i| realistic_update(&generator.json(i), round))
                .collect()
        } else {
            Ok((0..pods).map(|i| bench_pod_update(i, round)).collect())
        }
    };
    if realistic {
        seed_realistic(&server, pods)?;
    } else {
        seed_bench_pods(server.store(), pods).map_err(|e| e.to_string())?;
    }
    // The first round's objects are built before serving, so that writing them costs only
    // the stamp and the store's own work.
    let mut prebuilt: Vec<serde_json::Value> = build_round(1)?;
    println!("url {}", server.url());
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let store = server.store().clone();
    // Commands arrive on stdin; read them on a blocking thread.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut counter = 0u64;
    while let Some(line) = rx.recv().await {
        let mut words = line.split_whitespace();
        match (
            words.next(),
            words.next().and_then(|n| n.parse::<usize>().ok()),
        ) {
            (Some("update"), Some(n)) => {
                // `update <n> <per_s>`: at that pace instead of as fast as possible.
                let per_s = words.next().and_then(|r| r.parse::<f64>().ok());
                let store = store.clone();
                let start = Instant::now();
                counter += 1;
                let round = counter;
                let mut objects = std::mem::take(&mut prebuilt);
                if objects.is_empty() {
                    objects = build_round(round)?;
                }
                tokio::task::spawn_blocking(move || {
                    let paced_from = Instant::now();
                    for (i, mut pod) in objects.into_iter().enumerate().take(n) {
                        if let Some(per_s) = per_s {
                            let due = paced_from + Duration::from_secs_f64(i as f64 / per_s);
                            // Behind schedule (a sleep overshot): the next writes catch up.
                            if let Some(ahead) = due.checked_duration_since(Instant::now()) {
                                std::thread::sleep(ahead);
                            }
                        }
                        pod["metadata"]["annotations"] =
                            serde_json::json!({ WRITTEN_AT: now_us().to_string() });
                        if let Err(e) = store.update("pods", "", pod) {
                            eprintln!("bench server: update of pod-{i} failed: {e}");
                        }
                    }
                })
                .await
                .map_err(|e| e.to_string())?;
                println!("updated {n} {}", start.elapsed().as_millis());
                std::io::stdout().flush().map_err(|e| e.to_string())?;
            }
            (Some("relist"), None) => {
                // `relist`: the next watch answers 410 Gone, and the open ones end now.
                server.faults().add_rule(FaultRule::once(Fault::WatchGone));
                server.faults().close_all_watches();
                println!("relisting");
                std::io::stdout().flush().map_err(|e| e.to_string())?;
            }
            (Some("chunks"), None) => {
                // `chunks`: how the watch streams have cut their events so far.
                let counts =
                    serde_json::to_string(&server.watch_chunks()).map_err(|e| e.to_string())?;
                println!("chunks {counts}");
                std::io::stdout().flush().map_err(|e| e.to_string())?;
            }
            _ => eprintln!("bench server: unknown command {line:?}"),
        }
    }
    server.shutdown();
    Ok(())
}
