//! Protobuf wire primitives: varints, tags, field values (reading and writing).

use crate::error::Error;

/// Wire type of a varint field.
pub(crate) const VARINT: u8 = 0;
/// Wire type of a 64-bit field.
pub(crate) const FIXED64: u8 = 1;
/// Wire type of a length-delimited field.
pub(crate) const LEN: u8 = 2;
/// Wire type of a 32-bit field.
pub(crate) const FIXED32: u8 = 5;

/// One field's value as it is on the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

impl Value<'_> {
    /// True if the value is its type's zero (0, false, "" or no bytes).
    pub(crate) fn is_zero(&self) -> bool {
        match *self {
            Value::Varint(v) | Value::Fixed64(v) => v == 0,
            Value::Fixed32(v) => v == 0,
            Value::Bytes(b) => b.is_empty(),
        }
    }
}

/// A cursor over one message's bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64, Error> {
        // Most varints (keys, lengths of short fields) are one byte.
        if let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(b));
        }
        self.varint_slow()
    }

    fn varint_slow(&mut self) -> Result<u64, Error> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(Error::Truncated("varint"));
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(Error::Invalid("varint longer than 10 bytes".into()))
    }

    #[inline]
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).ok_or(Error::Truncated(what))?;
        let s = self.buf.get(self.pos..end).ok_or(Error::Truncated(what))?;
        self.pos = end;
        Ok(s)
    }

    pub(crate) fn fixed64(&mut self) -> Result<u64, Error> {
        let b = self.take(8, "fixed64")?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    pub(crate) fn fixed32(&mut self) -> Result<u32, Error> {
        let b = self.take(4, "fixed32")?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Ok(u32::from_le_bytes(a))
    }

    /// How many fields `number` the rest holds, counted without decoding them (a vector is
    /// then allocated once); malformed bytes end the count, the parse that follows reports
    /// them.
    pub(crate) fn count(mut self, number: u32) -> usize {
        let mut n = 0;
        while !self.is_empty() {
            match self.field() {
                Ok((k, _)) => n += usize::from(k == number),
                Err(_) => break,
            }
        }
        n
    }

    /// The next field: its number, and its value.
    #[inline]
    pub(crate) fn field(&mut self) -> Result<(u32, Value<'a>), Error> {
        let key = self.varint()?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| Error::Invalid(format!("bad field number in key {key}")))?;
        let value = match (key & 7) as u8 {
            VARINT => Value::Varint(self.varint()?),
            FIXED64 => Value::Fixed64(self.fixed64()?),
            LEN => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| Error::Truncated("length-delimited field"))?;
                Value::Bytes(self.take(len, "length-delimited field")?)
            }
            FIXED32 => Value::Fixed32(self.fixed32()?),
            w => {
                return Err(Error::Invalid(format!(
                    "unsupported wire type {w} (field {number})"
                )));
            }
        };
        Ok((number, value))
    }
}

/// Appends a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a field key.
pub(crate) fn put_key(out: &mut Vec<u8>, number: u32, wire: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire));
}

/// The encoded size of field `number`'s key.
pub(crate) fn key_len(number: u32) -> usize {
    prost::encoding::encoded_len_varint(u64::from(number) << 3)
}

/// The encoded size of a length-delimited field of a number below 16 holding `len` bytes.
pub(crate) fn bytes_field_len(len: usize) -> usize {
    1 + prost::encoding::encoded_len_varint(len as u64) + len
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a varint field.
pub(crate) fn put_varint_field(out: &mut Vec<u8>, number: u32, v: u64) {
    put_key(out, number, VARINT);
    put_varint(out, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_garbage() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX),
            u64::MAX,
            (-1i64) as u64,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(Reader::new(&out).varint(), Ok(v));
        }
        assert!(Reader::new(&[0x80]).varint().is_err());
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
    }

    #[test]
    fn fields_read_back_and_truncation_is_an_error() {
        let mut out = Vec::new();
        put_bytes(&mut out, 3, b"abc");
        put_varint_field(&mut out, 4, 9);
        let mut r = Reader::new(&out);
        assert!(matches!(r.field(), Ok((3, Value::Bytes(b"abc")))));
        assert!(matches!(r.field(), Ok((4, Value::Varint(9)))));
        assert!(r.is_empty());
        assert!(Reader::new(&out[..3]).field().is_err());
        // Field number 0 and wire type 3 (groups) are refused.
        assert!(Reader::new(&[0x00, 0x01]).field().is_err());
        assert!(Reader::new(&[0x0b]).field().is_err());
    }
}
