//! Reading one member of a JSON object without reading the members after it.

use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
#[cfg(any(feature = "kube", test))]
use serde_json::de::SliceRead;
use serde_json::de::{Read, StrRead};

/// The value of the member `name` of the JSON object `json`, read without reading the
/// members after it (the ones before it are skipped, with a check of their syntax).
/// `Ok(None)` when the object has no such member, or when a member named in `stop_at` comes
/// first (which is then not read either).
///
/// For objects whose members come in a known order: Kubernetes writes `metadata` before
/// `items` in a list, and before `spec` and `status` in an object.
///
/// # Errors
/// `json` is not an object, or is malformed up to the end of the member's value, or that
/// value is not a `T`.
#[cfg(any(feature = "kube", test))]
pub(crate) fn member_ahead<T: DeserializeOwned>(
    json: &[u8],
    name: &str,
    stop_at: &[&str],
) -> Result<Option<T>, serde_json::Error> {
    read_ahead(SliceRead::new(json), name, stop_at)
}

/// [`member_ahead`] for text: its strings are not checked for UTF-8 again (a metadata parse
/// spent 8% of its time on that).
pub(crate) fn member_ahead_str<T: DeserializeOwned>(
    json: &str,
    name: &str,
    stop_at: &[&str],
) -> Result<Option<T>, serde_json::Error> {
    read_ahead(StrRead::new(json), name, stop_at)
}

fn read_ahead<'de, R: Read<'de>, T: DeserializeOwned>(
    read: R,
    name: &str,
    stop_at: &[&str],
) -> Result<Option<T>, serde_json::Error> {
    let mut ahead = Ahead {
        name,
        stop_at,
        found: None,
        stopped: false,
    };
    let mut de = serde_json::Deserializer::new(read);
    // A visitor that stops early leaves members unread, on which the deserializer then errs:
    // that error is the expected end of a successful read.
    let read = (&mut ahead).deserialize(&mut de);
    match (ahead.found, ahead.stopped, read) {
        (Some(value), _, _) => Ok(Some(value)),
        (None, true, _) | (None, false, Ok(())) => Ok(None),
        (None, false, Err(e)) => Err(e),
    }
}

struct Ahead<'n, T> {
    name: &'n str,
    stop_at: &'n [&'n str],
    found: Option<T>,
    stopped: bool,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for &mut Ahead<'_, T> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for &mut Ahead<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == self.name {
                self.found = Some(map.next_value()?);
                return Ok(());
            }
            if self.stop_at.contains(&&*key) {
                self.stopped = true;
                return Ok(());
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both readers, over the same text.
    fn both<T: DeserializeOwned + PartialEq + std::fmt::Debug>(
        json: &str,
        name: &str,
        stop_at: &[&str],
    ) -> Result<Option<T>, serde_json::Error> {
        let bytes = member_ahead::<T>(json.as_bytes(), name, stop_at);
        let text = member_ahead_str::<T>(json, name, stop_at);
        match (&bytes, &text) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{json}"),
            (Err(_), Err(_)) => {}
            _ => panic!("the readers disagree on {json}: {bytes:?} / {text:?}"),
        }
        text
    }

    #[test]
    fn the_member_is_read_and_what_follows_it_is_not() {
        let json = r#"{"kind":"X","metadata":{"name":"a"},"spec":nope"#;
        let got: Option<serde_json::Value> = both(json, "metadata", &[]).unwrap();
        assert_eq!(got, Some(serde_json::json!({"name": "a"})));
        // Last member, absent, or behind a stop.
        let last: Option<u8> = both(r#"{"a":[1,"}"],"m":7}"#, "m", &[]).unwrap();
        assert_eq!(last, Some(7));
        let absent: Option<u8> = both(r#"{"a":1}"#, "m", &[]).unwrap();
        assert_eq!(absent, None);
        let stopped: Option<u8> = both(r#"{"items":nope,"m":7}"#, "m", &["items"]).unwrap();
        assert_eq!(stopped, None);
        let escaped: Option<String> = both(r#"{"m":"caf\u00e9 \"x\""}"#, "m", &[]).unwrap();
        assert_eq!(escaped.as_deref(), Some("café \"x\""));
    }

    #[test]
    fn malformed_input_up_to_the_member_and_a_wrong_value_are_errors() {
        for bad in [
            r#"{"a":nope,"m":7}"#,
            r#"{"m":"seven"}"#,
            r#"{"m":"#,
            r#"[1]"#,
        ] {
            assert!(both::<u8>(bad, "m", &[]).is_err(), "{bad:?}");
        }
        // Bytes that are not UTF-8 inside a string: an error from the byte reader.
        assert!(member_ahead::<String>(b"{\"m\":\"\xff\"}", "m", &[]).is_err());
    }
}
