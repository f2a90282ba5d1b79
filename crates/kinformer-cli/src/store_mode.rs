//! `--store typed|compact`: how the CLI's informers keep their objects.

use kinformer::cache::Storage;
use kinformer::cache::store::CompactOptions;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The storage of an informer's cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreMode {
    /// Objects as typed values: fastest reads, most memory.
    Typed,
    /// Objects encoded and compressed, decoded on read: a fraction of the memory.
    Compact,
}

impl StoreMode {
    /// The storage for objects of type `K`; compact storage keeps up to `hot_objects` decoded
    /// objects for reads.
    pub fn storage<K>(self, hot_objects: usize) -> Storage<K>
    where
        K: Resource + Serialize + DeserializeOwned + 'static,
    {
        match self {
            StoreMode::Typed => Storage::typed(),
            StoreMode::Compact => {
                Storage::compact(CompactOptions::default().hot_objects(hot_objects))
            }
        }
    }
}
