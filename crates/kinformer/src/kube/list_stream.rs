//! List responses too large to hold whole, decoded as they stream in.
//!
//! A list body is read as it arrives. One that ends within a few MiB (every page of a paged
//! list; [`Streamed::above`]) is decoded whole, as before; one that grows past it (a list at
//! `resourceVersion=0`, which a real API server's watch cache answers in one response whatever
//! `limit` says) streams: a task of its own reads the rest of the body and splits it into
//! batches of items ([`codec::list_stream`](crate::codec::list_stream)), at most
//! [`BATCHES_AHEAD`] batches ahead of their decoding; each batch is decoded on a task of its
//! own, [`DECODES_AHEAD`] at a time (so on a multi-thread runtime a list decodes on several
//! cores), and handed to the consumer in order ([`ListRest`]). So a list of any size is held
//! as a bounded window: the bytes already read, a few batches raw and decoded, and the item
//! being received.
//!
//! A body that stops arriving for the request timeout, ends inside an item, frames its items
//! wrongly or holds an item over the cap (64 MiB by default) fails the list with an error naming
//! the item's position and byte offset.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::task::AbortOnDropHandle;

use super::error;
use crate::cache::listwatch::{DecodeError, ListRest, ListWatchError, ObjectList};
use crate::codec::list_stream::{
    ListBatch, ListEnd, ListFormat, ListSplit, SplitError, decode_batch,
};

/// How a list body is read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Streamed {
    /// A body larger than this streams; a smaller one is decoded whole.
    pub(crate) above: usize,
    /// The longest wait for more of a streaming body.
    pub(crate) idle: Duration,
    /// The cap on one item's bytes.
    pub(crate) max_item: usize,
}

/// A batch is handed over once it holds this many items…
const BATCH_ITEMS: usize = 500;

/// …or this many bytes.
const BATCH_BYTES: usize = 512 << 10;

/// How many batches the reading task runs ahead of their decoding.
const BATCHES_AHEAD: usize = 2;

/// How many batches are decoded at once (each on a task of its own), ahead of the consumer.
const DECODES_AHEAD: usize = 2;

/// What the reading task sends.
enum RawPart {
    /// A batch of items; more follow.
    Batch(ListBatch),
    /// The last batch, if any, and the list's metadata.
    Last(Option<ListBatch>, ListEnd),
}

/// A list body being read.
pub(crate) enum ListBody {
    /// The whole body, read before it grew past [`Streamed::above`].
    Whole {
        /// The response's content type.
        content_type: String,
        /// The body.
        body: Bytes,
    },
    /// A body streaming in, split on a task of its own.
    Streaming(Streaming),
}

/// The batches of a body that streams in (see the module docs).
pub(crate) struct Streaming {
    content_type: String,
    format: ListFormat,
    parts: mpsc::Receiver<Result<RawPart, ListWatchError>>,
    task: AbortOnDropHandle<()>,
}

impl ListBody {
    /// The response's content type.
    pub(crate) fn content_type(&self) -> &str {
        match self {
            ListBody::Whole { content_type, .. } => content_type,
            ListBody::Streaming(s) => &s.content_type,
        }
    }
}

/// Reads a list response's body: whole if it ends within `stream.above` bytes, else the bytes
/// so far and the rest go to a splitting task.
pub(crate) async fn read<S>(
    content_type: String,
    mut body: S,
    stream: Streamed,
) -> Result<ListBody, ListWatchError>
where
    S: Stream<Item = Result<Bytes, ::kube::Error>> + Send + Unpin + 'static,
{
    let mut whole = BytesMut::new();
    let mut first: Option<Bytes> = None;
    while let Some(piece) = body.next().await {
        let piece = piece.map_err(error::from_kube)?;
        if whole.is_empty() && first.is_none() {
            // A body in one piece is kept as it is, without a copy.
            first = Some(piece);
        } else {
            if let Some(f) = first.take() {
                whole.extend_from_slice(&f);
            }
            whole.extend_from_slice(&piece);
        }
        let len = first.as_ref().map_or(whole.len(), Bytes::len);
        if len > stream.above {
            let read = first.unwrap_or_else(|| whole.freeze());
            return Ok(ListBody::Streaming(Streaming::start(
                content_type,
                read,
                body,
                stream,
            )));
        }
    }
    Ok(ListBody::Whole {
        content_type,
        body: first.unwrap_or_else(|| whole.freeze()),
    })
}

/// The encoding a list response's content type names.
fn format_of(content_type: &str) -> ListFormat {
    #[cfg(feature = "protobuf")]
    if crate::codec::protobuf::is_protobuf(content_type) {
        return ListFormat::Protobuf;
    }
    let _ = content_type;
    ListFormat::Json
}

impl Streaming {
    /// Starts the task that reads and splits the body: `read` is what arrived so far.
    fn start<S>(content_type: String, read: Bytes, body: S, stream: Streamed) -> Self
    where
        S: Stream<Item = Result<Bytes, ::kube::Error>> + Send + Unpin + 'static,
    {
        let format = format_of(&content_type);
        let (tx, parts) = mpsc::channel(BATCHES_AHEAD);
        let task = AbortOnDropHandle::new(tokio::spawn(split_body(
            ListSplit::new(format, stream.max_item, BATCH_ITEMS),
            read,
            body,
            stream.idle,
            tx,
        )));
        Self {
            content_type,
            format,
            parts,
            task,
        }
    }

    /// The rest of the list, decoded as `K` batch by batch: each batch on a task of its own
    /// as it arrives, up to [`DECODES_AHEAD`] at once, handed over in order.
    pub(crate) fn into_rest<K: DeserializeOwned + Send + Sync + 'static>(self) -> ListRest<K> {
        let Self {
            format,
            parts,
            task,
            ..
        } = self;
        let raw = futures::stream::unfold((parts, Some(task)), |(mut rx, task)| async move {
            // The reading task ends with the last part; dropping the stream aborts it.
            let task = task?;
            let part = rx.recv().await.unwrap_or_else(|| {
                Err(ListWatchError::transport(
                    "the list response's reader stopped before the list's end",
                ))
            });
            let more = matches!(part, Ok(RawPart::Batch(_)));
            Some((part, (rx, more.then_some(task))))
        });
        let parts = raw
            .map(move |part| {
                let decode = AbortOnDropHandle::new(tokio::spawn(async move {
                    part.and_then(|part| decode_part::<K>(format, part))
                }));
                async move {
                    decode.await.unwrap_or_else(|e| {
                        Err(ListWatchError::transport(format!(
                            "decoding a part of the list did not finish: {e}"
                        )))
                    })
                }
            })
            .buffered(DECODES_AHEAD);
        ListRest::new(parts.boxed())
    }
}

/// Decodes a part as `K`: its items, and for the last its list's metadata.
fn decode_part<K: DeserializeOwned + Send + Sync + 'static>(
    format: ListFormat,
    part: RawPart,
) -> Result<(ObjectList<K>, bool), ListWatchError> {
    match part {
        RawPart::Batch(batch) => decode_batch::<K>(format, &batch).map(|l| (l, false)),
        RawPart::Last(batch, end) => {
            let mut list = match batch {
                Some(batch) => decode_batch::<K>(format, &batch)?,
                None => ObjectList::default(),
            };
            list.resource_version = end.resource_version;
            list.continue_token = end.continue_token;
            list.remaining_item_count = end.remaining_item_count;
            Ok((list, true))
        }
    }
}

/// Feeds `read`, then the rest of `body`, to `split`, sending every full batch and then the
/// last one with the list's metadata, or the first error. Returns when done, on an error, or
/// when nobody takes the parts any more.
async fn split_body<S>(
    mut split: ListSplit,
    read: Bytes,
    mut body: S,
    idle: Duration,
    tx: mpsc::Sender<Result<RawPart, ListWatchError>>,
) where
    S: Stream<Item = Result<Bytes, ::kube::Error>> + Send + Unpin,
{
    let mut piece = Some(read);
    loop {
        let bytes = match piece.take() {
            Some(bytes) => bytes,
            None => match tokio::time::timeout(idle, body.next()).await {
                Ok(Some(Ok(bytes))) => bytes,
                Ok(Some(Err(e))) => {
                    let _ = tx.send(Err(error::from_kube(e))).await;
                    return;
                }
                Ok(None) => break,
                Err(_) => {
                    let message = format!(
                        "the list response stopped arriving for {idle:?}, after {} items",
                        split.items()
                    );
                    let _ = tx.send(Err(ListWatchError::transport(message))).await;
                    return;
                }
            },
        };
        // Items as they complete: a piece can hold many batches.
        let mut rest = &bytes[..];
        loop {
            let taken = match split.push(rest) {
                Ok(taken) => taken,
                Err(e) => {
                    let _ = tx.send(Err(split_failed(e))).await;
                    return;
                }
            };
            rest = &rest[taken..];
            let full = split.is_full() || split.batch_size().1 >= BATCH_BYTES;
            if full && let Some(batch) = split.take_batch() {
                if tx.send(Ok(RawPart::Batch(batch))).await.is_err() {
                    return;
                }
                // A splitter may hold taken bytes it has not split yet.
                continue;
            }
            if rest.is_empty() {
                break;
            }
        }
    }
    // What waited for more of the body.
    loop {
        if let Err(e) = split.end_of_body() {
            let _ = tx.send(Err(split_failed(e))).await;
            return;
        }
        if !split.is_full() {
            break;
        }
        if let Some(batch) = split.take_batch()
            && tx.send(Ok(RawPart::Batch(batch))).await.is_err()
        {
            return;
        }
    }
    let last = split.take_batch();
    let part = split
        .finish()
        .map(|end| RawPart::Last(last, end))
        .map_err(split_failed);
    let _ = tx.send(part).await;
}

fn split_failed(e: SplitError) -> ListWatchError {
    ListWatchError::Decode(DecodeError::new(e.to_string()))
}
