//! The wire format: what fibra-remote puts in a NATS message's payload.
//!
//! Every payload starts with an 18-byte header, then a body in
//! [postcard](https://docs.rs/postcard) (serde's compact binary format,
//! varint integers, stable since postcard 1.0):
//!
//! | bytes  | field   | meaning                                            |
//! |--------|---------|----------------------------------------------------|
//! | 0      | version | [`VERSION`]; a receiver drops (and counts) others  |
//! | 1      | kind    | what the message is (`Kind`)                       |
//! | 2..10  | a       | little-endian u64, per kind (below)                |
//! | 10..18 | b       | little-endian u64, per kind (below)                |
//!
//! | kind        | a                | b                | body               |
//! |-------------|------------------|------------------|--------------------|
//! | `Cast`      | sender's node id | sequence number  | the message `M`    |
//! | `Reply`     | reply box id     | call number      | the reply `R`      |
//! | `Heartbeat` | sender's node id | 0                | empty              |
//! | `Stopping`  | sender's node id | 0                | empty              |
//! | `Exit`      | actor id         | 0                | [`Down`]           |
//! | `Lookup`    | node id          | actor id         | empty              |
//! | `Alive`     | actor id         | 1 alive, 0 not   | empty              |
//!
//! A change that an old receiver would misread bumps [`VERSION`].
//!
//! [`Down`]: crate::Down

use serde::Serialize;

/// The version of the wire format this crate writes, and the only one it
/// reads.
///
/// ```
/// assert_eq!(fibra_remote::wire::VERSION, 1);
/// ```
pub const VERSION: u8 = 1;

/// Bytes before the body.
pub(crate) const HEADER_LEN: usize = 18;

/// What a message is; byte 1 of the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Cast = 1,
    Reply = 2,
    Heartbeat = 3,
    Stopping = 4,
    Exit = 5,
    Lookup = 6,
    Alive = 7,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Cast,
            2 => Kind::Reply,
            3 => Kind::Heartbeat,
            4 => Kind::Stopping,
            5 => Kind::Exit,
            6 => Kind::Lookup,
            7 => Kind::Alive,
            _ => return None,
        })
    }
}

/// A decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) kind: Kind,
    pub(crate) a: u64,
    pub(crate) b: u64,
}

/// Why a payload could not be read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WireError {
    /// Shorter than a header.
    Short(usize),
    /// Written by another version of the format.
    Version(u8),
    /// An unknown kind byte.
    Kind(u8),
    /// A kind this subject does not carry.
    Unexpected(Kind),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Short(n) => {
                write!(f, "{n} bytes, shorter than the {HEADER_LEN}-byte header")
            }
            WireError::Version(v) => {
                write!(f, "wire format version {v}, this node reads {VERSION}")
            }
            WireError::Kind(k) => write!(f, "unknown message kind {k}"),
            WireError::Unexpected(k) => write!(f, "unexpected message kind {k:?}"),
        }
    }
}

/// The header alone (a body-less message).
pub(crate) fn header(kind: Kind, a: u64, b: u64) -> Vec<u8> {
    let mut buf = Vec::with_capacity(HEADER_LEN);
    put_header(&mut buf, kind, a, b);
    buf
}

fn put_header(buf: &mut Vec<u8>, kind: Kind, a: u64, b: u64) {
    buf.push(VERSION);
    buf.push(kind as u8);
    buf.extend_from_slice(&a.to_le_bytes());
    buf.extend_from_slice(&b.to_le_bytes());
}

/// A header followed by `body` in postcard.
pub(crate) fn encode<T: Serialize + ?Sized>(
    kind: Kind,
    a: u64,
    b: u64,
    body: &T,
) -> Result<Vec<u8>, postcard::Error> {
    let mut buf = Vec::with_capacity(64);
    put_header(&mut buf, kind, a, b);
    postcard::to_extend(body, buf)
}

/// Overwrites field `b` of an encoded message (the publisher stamps the
/// sequence number of a cast just before it goes out).
pub(crate) fn set_b(buf: &mut [u8], b: u64) {
    buf[10..HEADER_LEN].copy_from_slice(&b.to_le_bytes());
}

/// Splits a payload into its header and body.
pub(crate) fn decode(buf: &[u8]) -> Result<(Header, &[u8]), WireError> {
    if buf.len() < HEADER_LEN {
        return Err(WireError::Short(buf.len()));
    }
    if buf[0] != VERSION {
        return Err(WireError::Version(buf[0]));
    }
    let kind = Kind::from_byte(buf[1]).ok_or(WireError::Kind(buf[1]))?;
    let word = |i: usize| {
        let mut w = [0; 8];
        w.copy_from_slice(&buf[i..i + 8]);
        u64::from_le_bytes(w)
    };
    let header = Header {
        kind,
        a: word(2),
        b: word(10),
    };
    Ok((header, &buf[HEADER_LEN..]))
}

/// Splits a payload that must be of `kind`.
pub(crate) fn decode_kind(buf: &[u8], kind: Kind) -> Result<(Header, &[u8]), WireError> {
    let (h, body) = decode(buf)?;
    if h.kind != kind {
        return Err(WireError::Unexpected(h.kind));
    }
    Ok((h, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut buf = encode(Kind::Cast, 7, 0, &("hi", 3u32)).unwrap();
        set_b(&mut buf, 42);
        let (h, body) = decode(&buf).unwrap();
        assert_eq!(
            h,
            Header {
                kind: Kind::Cast,
                a: 7,
                b: 42
            }
        );
        let v: (String, u32) = postcard::from_bytes(body).unwrap();
        assert_eq!(v, ("hi".to_string(), 3));
        // The body is compact: a length byte, two bytes, one varint byte.
        assert_eq!(buf.len(), HEADER_LEN + 4);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(decode(&[1, 2, 3]), Err(WireError::Short(3)));
        let mut buf = header(Kind::Heartbeat, 1, 0);
        buf[0] = 9;
        assert_eq!(decode(&buf), Err(WireError::Version(9)));
        buf[0] = VERSION;
        buf[1] = 200;
        assert_eq!(decode(&buf), Err(WireError::Kind(200)));
        buf[1] = Kind::Heartbeat as u8;
        assert_eq!(
            decode_kind(&buf, Kind::Cast),
            Err(WireError::Unexpected(Kind::Heartbeat))
        );
    }
}
