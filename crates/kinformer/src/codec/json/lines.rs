//! The lines of a JSON watch body, cut from the chunks as they arrive: a line that lies within
//! one chunk is read where it is (no copy, no allocation); only a line split across chunks is
//! assembled, in a buffer kept for the next such line.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde::de::DeserializeOwned;

use super::decode;
use crate::codec::{DecodeError, ListWatchError, WatchEvent, Wire, heap_reserve};

/// The longest watch line accepted (an event carrying one object; Kubernetes refuses objects
/// above 1.5 MiB, so this is far beyond any real one).
pub(crate) const MAX_LINE: usize = 64 << 20;

/// A line longer than the limit arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineTooLong {
    /// The bytes received of it so far.
    pub(crate) len: usize,
    /// The limit.
    pub(crate) limit: usize,
}

/// Cuts newline-separated lines out of received chunks.
#[derive(Debug)]
pub(crate) struct LineReader {
    /// What is left of the last chunk pushed.
    chunk: Bytes,
    /// The line last returned, when it lay within one chunk.
    line: Bytes,
    /// The start of a line that began in an earlier chunk.
    partial: Vec<u8>,
    /// `partial` holds the line last returned: cleared at the next call.
    partial_returned: bool,
    max_line: usize,
}

impl LineReader {
    /// A reader refusing lines longer than `max_line` bytes.
    pub(crate) fn new(max_line: usize) -> Self {
        LineReader {
            chunk: Bytes::new(),
            line: Bytes::new(),
            partial: Vec::new(),
            partial_returned: false,
            max_line,
        }
    }

    /// Hands the reader the next chunk; call it only after [`next_line`](Self::next_line)
    /// returned `None` (the previous chunk is used up).
    pub(crate) fn push(&mut self, chunk: Bytes) {
        debug_assert!(self.chunk.is_empty(), "push before the chunk was used up");
        self.chunk = chunk;
    }

    /// The next complete line (without its `\n`), or `None` when the chunks so far hold none.
    ///
    /// # Errors
    /// [`LineTooLong`] when a line grows beyond the limit before its end arrives.
    pub(crate) fn next_line(&mut self) -> Option<Result<&[u8], LineTooLong>> {
        if self.partial_returned {
            self.partial.clear();
            self.partial_returned = false;
        }
        match memchr::memchr(b'\n', &self.chunk) {
            Some(end) => {
                let mut line = self.chunk.split_to(end + 1);
                line.truncate(end);
                if self.partial.is_empty() {
                    self.line = line;
                    return Some(Ok(&self.line));
                }
                if let Some(e) = self.too_long(self.partial.len() + line.len()) {
                    return Some(Err(e));
                }
                self.partial.extend_from_slice(&line);
                self.partial_returned = true;
                Some(Ok(&self.partial))
            }
            None => {
                let rest = std::mem::take(&mut self.chunk);
                if let Some(e) = self.too_long(self.partial.len() + rest.len()) {
                    return Some(Err(e));
                }
                self.partial.extend_from_slice(&rest);
                None
            }
        }
    }

    /// At the end of the body: the last line if it had no `\n` (empty if none).
    pub(crate) fn rest(&mut self) -> &[u8] {
        if self.partial_returned {
            self.partial.clear();
            self.partial_returned = false;
        }
        let rest = std::mem::take(&mut self.chunk);
        self.partial.extend_from_slice(&rest);
        self.partial_returned = true;
        &self.partial
    }

    fn too_long(&self, len: usize) -> Option<LineTooLong> {
        (len > self.max_line).then_some(LineTooLong {
            len,
            limit: self.max_line,
        })
    }
}

/// The events of a JSON watch body (a stream of chunks), one per line. A read error or a line
/// that is too long is reported, then the stream ends; a line that is not UTF-8 is a
/// [`DecodeError`] item (the lister-watcher ends its watch at the first error item). A last
/// line without its `\n` is decoded like the others.
pub(crate) fn json_events<K, S, E>(
    body: S,
) -> impl Stream<Item = Result<WatchEvent<K>, ListWatchError>> + Send
where
    K: DeserializeOwned + Send + Sync + 'static,
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: Into<ListWatchError>,
{
    struct State<S> {
        body: S,
        lines: LineReader,
        done: bool,
    }
    let state = State {
        body,
        lines: LineReader::new(MAX_LINE),
        done: false,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if st.done {
                return None;
            }
            match st.lines.next_line() {
                Some(Ok(line)) => {
                    if let Some(event) = decode_line::<K>(line) {
                        return Some((event, st));
                    }
                    continue;
                }
                Some(Err(e)) => {
                    st.done = true;
                    let message = format!("watch line of {} bytes exceeds {}", e.len, e.limit);
                    return Some((Err(DecodeError::new(message).into()), st));
                }
                None => {}
            }
            match st.body.next().await {
                Some(Ok(chunk)) => {
                    // Room for the typed objects of the events this chunk carries.
                    heap_reserve::reserve_for_body::<K>(chunk.len(), Wire::Json);
                    st.lines.push(chunk)
                }
                Some(Err(e)) => {
                    st.done = true;
                    return Some((Err(e.into()), st));
                }
                None => {
                    st.done = true;
                    let event = decode_line::<K>(st.lines.rest())?;
                    return Some((event, st));
                }
            }
        }
    })
}

fn decode_line<K: DeserializeOwned>(line: &[u8]) -> Option<Result<WatchEvent<K>, ListWatchError>> {
    match std::str::from_utf8(line) {
        Ok(text) => decode::decode_watch_line::<K>(text),
        Err(e) => Some(Err(DecodeError::new(format!(
            "watch line is not UTF-8: {e}"
        ))
        .into())),
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn lines_of(chunks: &[&[u8]], max: usize) -> (Vec<Result<String, LineTooLong>>, String) {
        let mut r = LineReader::new(max);
        let mut out = Vec::new();
        for c in chunks {
            r.push(Bytes::copy_from_slice(c));
            while let Some(line) = r.next_line() {
                let failed = line.is_err();
                out.push(line.map(|l| String::from_utf8_lossy(l).into_owned()));
                if failed {
                    return (out, String::new());
                }
            }
        }
        let rest = String::from_utf8_lossy(r.rest()).into_owned();
        (out, rest)
    }

    #[test]
    fn lines_within_and_across_chunks_come_out_whole() {
        let (lines, rest) = lines_of(&[b"ab\ncd", b"e", b"f\n\ngh\nij"], MAX_LINE);
        let lines: Vec<String> = lines.into_iter().map(Result::unwrap).collect();
        assert_eq!(lines, ["ab", "cdef", "", "gh"]);
        assert_eq!(rest, "ij");
    }

    #[test]
    fn every_split_of_a_body_gives_the_same_lines() {
        let body = b"{\"a\":1}\n{\"b\":22}\n\n{\"c\":333}\n";
        for size in 1..body.len() {
            let chunks: Vec<&[u8]> = body.chunks(size).collect();
            let (lines, rest) = lines_of(&chunks, MAX_LINE);
            let lines: Vec<String> = lines.into_iter().map(Result::unwrap).collect();
            assert_eq!(
                lines,
                ["{\"a\":1}", "{\"b\":22}", "", "{\"c\":333}"],
                "{size}"
            );
            assert_eq!(rest, "");
        }
    }

    #[test]
    fn a_line_beyond_the_limit_is_refused_before_its_end_arrives() {
        let (lines, _) = lines_of(&[b"ok\n0123", b"456789"], 8);
        assert_eq!(lines[0], Ok("ok".to_owned()));
        assert_eq!(lines[1], Err(LineTooLong { len: 10, limit: 8 }));
        // Within one chunk, too.
        let (lines, _) = lines_of(&[b"0123", b"45678\n"], 8);
        assert_eq!(lines[0], Err(LineTooLong { len: 9, limit: 8 }));
    }

    fn event_line(name: &str) -> String {
        format!(
            "{{\"type\":\"ADDED\",\"object\":{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"{name}\"}}}}}}\n"
        )
    }

    async fn events_of(chunks: Vec<Vec<u8>>) -> Vec<Result<WatchEvent<ConfigMap>, ListWatchError>> {
        let chunks: Vec<Result<Bytes, ListWatchError>> =
            chunks.into_iter().map(|c| Ok(Bytes::from(c))).collect();
        json_events::<ConfigMap, _, _>(futures::stream::iter(chunks))
            .collect()
            .await
    }

    fn name(e: &Result<WatchEvent<ConfigMap>, ListWatchError>) -> Option<&str> {
        match e {
            Ok(WatchEvent::Added(o)) => o.metadata.name.as_deref(),
            _ => None,
        }
    }

    #[tokio::test]
    async fn events_split_anywhere_decode_and_a_last_line_without_newline_counts() {
        let mut body = event_line("a") + &event_line("b");
        body.push_str(event_line("c").trim_end());
        for size in [1, 7, 50, body.len()] {
            let chunks = body.as_bytes().chunks(size).map(<[u8]>::to_vec).collect();
            let events = events_of(chunks).await;
            let names: Vec<_> = events.iter().map(name).collect();
            assert_eq!(names, [Some("a"), Some("b"), Some("c")], "{size}");
        }
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_is_a_decode_error_and_the_next_lines_still_decode() {
        let mut body = event_line("a").into_bytes();
        body.extend_from_slice(b"{\"type\":\"ADDED\",\"object\":\xff}\n");
        body.extend_from_slice(event_line("b").as_bytes());
        // (The lister-watcher ends its watch at the first error item.)
        let events = events_of(vec![body]).await;
        assert_eq!(events.len(), 3, "{events:?}");
        assert_eq!(name(&events[0]), Some("a"));
        assert!(
            matches!(&events[1], Err(ListWatchError::Decode(d)) if d.message.contains("UTF-8")),
            "{:?}",
            events[1]
        );
        assert_eq!(name(&events[2]), Some("b"));
    }

    #[tokio::test]
    async fn a_read_error_is_reported_then_the_stream_ends() {
        let chunks: Vec<Result<Bytes, ListWatchError>> = vec![
            Ok(Bytes::from(event_line("a"))),
            Err(ListWatchError::transport("reset".to_owned())),
            Ok(Bytes::from(event_line("b"))),
        ];
        let events: Vec<_> = json_events::<ConfigMap, _, _>(futures::stream::iter(chunks))
            .collect()
            .await;
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(name(&events[0]), Some("a"));
        assert!(events[1].is_err());
    }
}
