//! Reading one member of a JSON object without reading the members after it.

use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

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
pub(crate) fn member_ahead<T: DeserializeOwned>(
    json: &[u8],
    name: &str,
    stop_at: &[&str],
) -> Result<Option<T>, serde_json::Error> {
    let mut ahead = Ahead {
        name,
        stop_at,
        found: None,
        stopped: false,
    };
    let mut de = serde_json::Deserializer::from_slice(json);
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

    #[test]
    fn the_member_is_read_and_what_follows_it_is_not() {
        let json = br#"{"kind":"X","metadata":{"name":"a"},"spec":nope"#;
        let got: Option<serde_json::Value> = member_ahead(json, "metadata", &[]).unwrap();
        assert_eq!(got, Some(serde_json::json!({"name": "a"})));
        // Last member, absent, or behind a stop.
        let last: Option<u8> = member_ahead(br#"{"a":[1,"}"],"m":7}"#, "m", &[]).unwrap();
        assert_eq!(last, Some(7));
        let absent: Option<u8> = member_ahead(br#"{"a":1}"#, "m", &[]).unwrap();
        assert_eq!(absent, None);
        let stopped: Option<u8> =
            member_ahead(br#"{"items":nope,"m":7}"#, "m", &["items"]).unwrap();
        assert_eq!(stopped, None);
    }

    #[test]
    fn malformed_input_up_to_the_member_and_a_wrong_value_are_errors() {
        for bad in [
            &br#"{"a":nope,"m":7}"#[..],
            br#"{"m":"seven"}"#,
            br#"{"m":"#,
            br#"[1]"#,
        ] {
            assert!(member_ahead::<u8>(bad, "m", &[]).is_err(), "{bad:?}");
        }
    }
}
