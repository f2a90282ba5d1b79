//! The realistic pods of W4R and E1R (BENCHMARKS.md rules): `realistic-pod.json` with its
//! `{{…}}` fields filled from one generator seeded with 42, so pod `i` of a fresh generator
//! walked in order is the same in every process.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

const REALISTIC_TEMPLATE: &str = include_str!("realistic-pod.json");

/// Generates W4R's realistic pods (BENCHMARKS.md rules) from one seeded generator.
pub(crate) struct RealisticPods {
    rng: rand::rngs::StdRng,
    hashes: BTreeMap<(usize, usize), (String, String)>,
    digests: BTreeMap<usize, String>,
}

impl RealisticPods {
    pub(crate) fn new() -> Self {
        use rand::SeedableRng;
        RealisticPods {
            rng: rand::rngs::StdRng::seed_from_u64(42),
            hashes: BTreeMap::new(),
            digests: BTreeMap::new(),
        }
    }

    fn chars(&mut self, n: usize, alphabet: &[u8]) -> String {
        use rand::Rng;
        (0..n)
            .map(|_| char::from(alphabet[self.rng.random_range(0..alphabet.len())]))
            .collect()
    }

    fn uuid(&mut self) -> String {
        use rand::Rng;
        uuid::Builder::from_random_bytes(self.rng.random())
            .into_uuid()
            .to_string()
    }

    /// The JSON of pod `i`.
    pub(crate) fn json(&mut self, i: usize) -> String {
        use rand::Rng;
        const HEX: &[u8] = b"0123456789abcdef";
        const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let app_i = i % 50;
        let ns_i = i % 100;
        let app = format!("svc-{app_i}");
        let ns = format!("ns-{ns_i}");
        if !self.hashes.contains_key(&(app_i, ns_i)) {
            let h = self.chars(10, HEX);
            let owner = self.uuid();
            self.hashes.insert((app_i, ns_i), (h, owner));
        }
        if !self.digests.contains_key(&app_i) {
            let d = self.chars(64, HEX);
            self.digests.insert(app_i, d);
        }
        let (hash, owner_uid) = self.hashes[&(app_i, ns_i)].clone();
        let digest = self.digests[&app_i].clone();
        let suffix = self.chars(5, ALNUM);
        let uid = self.uuid();
        let token = self.chars(5, ALNUM);
        let container_id = self.chars(64, HEX);
        let created = self.rng.random_range(0..30 * 86_400u64);
        let time = |s: u64| {
            format!(
                "2026-01-{:02}T{:02}:{:02}:{:02}Z",
                1 + s / 86_400,
                s % 86_400 / 3600,
                s % 3600 / 60,
                s % 60
            )
        };
        REALISTIC_TEMPLATE
            .replace("{{APP}}", &app)
            .replace("{{HASH}}", &hash)
            .replace("{{NAME}}", &format!("{app}-{hash}-{suffix}"))
            .replace("{{NS}}", &ns)
            .replace("{{TIER}}", &format!("t{}", i % 3))
            .replace("{{MINOR}}", &(i % 7).to_string())
            .replace("{{UID}}", &uid)
            .replace("{{OWNER_UID}}", &owner_uid)
            .replace("{{RV}}", &(i + 1).to_string())
            .replace("{{CREATED}}", &time(created))
            .replace("{{STARTED}}", &time(created + 2))
            .replace("{{READY}}", &time(created + 9))
            .replace("{{NODE}}", &format!("node-{}", i % 500))
            .replace(
                "{{HOST_IP}}",
                &format!("10.0.{}.{}", (i % 500) / 250, i % 250),
            )
            .replace("{{POD_IP}}", &format!("10.244.{}.{}", i / 250, i % 250))
            .replace("{{TOKEN}}", &token)
            .replace("{{CONTAINER_ID}}", &container_id)
            .replace("{{IMAGE_DIGEST}}", &digest)
            .replace("{{RESTARTS}}", &(i % 5).to_string())
    }

    pub(crate) fn pod(&mut self, i: usize) -> Result<Pod, String> {
        serde_json::from_str(&self.json(i)).map_err(|e| format!("realistic pod {i}: {e}"))
    }
}
