//! What every target shares: how the fuzzer's bytes become a bound and chunks, and what
//! every composition must do with them.
#![allow(dead_code)]

use _native::anthropic::AnthropicEncoder;
use _native::chat::ChatEncoder;
use _native::gemini::GeminiEncoder;
use _native::responses::{ResponsesEncoder, ResponsesOptions};
use _native::stream::{Encoder, Transducer, DEFAULT_MAX_EVENT_BYTES};
use _native::transducers::Upstream;

pub const KEY: &[u8] = b"fuzz-key";

/// The first byte picks the event bound, the second the chunk sizes; the rest is the body.
pub fn split(data: &[u8]) -> (usize, Vec<&[u8]>) {
    let (head, body) = data.split_at(data.len().min(2));
    let bound = match head.first().copied().unwrap_or(0) % 4 {
        0 => 16,
        1 => 256,
        2 => 4096,
        _ => DEFAULT_MAX_EVENT_BYTES,
    };
    let mut seed = u32::from(head.get(1).copied().unwrap_or(0)) | 1;
    let mut chunks = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let size = 1 + (seed >> 16) as usize % 64;
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        chunks.push(chunk);
        rest = tail;
    }
    (bound, chunks)
}

/// A client encoder as the targets start it: every option that adds output on.
pub trait Client: Encoder {
    fn client() -> Self;
}

impl Client for AnthropicEncoder {
    fn client() -> Self {
        AnthropicEncoder::new("m", "c", 1)
    }
}

impl Client for ChatEncoder {
    fn client() -> Self {
        ChatEncoder::new("c", "m", 1, true, Some(KEY))
    }
}

impl Client for ResponsesEncoder {
    fn client() -> Self {
        let options = ResponsesOptions {
            echo: "{}",
            signing_key: Some(KEY),
            ..ResponsesOptions::default()
        };
        ResponsesEncoder::new("r", "m", 1, 1, options)
    }
}

impl Client for GeminiEncoder {
    fn client() -> Self {
        GeminiEncoder::new("r", "m", true, Some(KEY))
    }
}

/// A composition of `_native::transducers` (`AnthropicViaChatStream`...).
pub trait Composition {
    type Decoder: Upstream;
    type Encoder: Client;
}

impl<D: Upstream, E: Client> Composition for Transducer<D, E> {
    type Decoder = D;
    type Encoder = E;
}

/// Arbitrary upstream bytes, split anywhere, under a drawn bound: every output ends on an
/// event's end, the parser never holds more than the bound, upstream EOF always ends the
/// client's stream and nothing follows its end.
pub fn check<T: Composition>(data: &[u8]) {
    let (bound, chunks) = split(data);
    let decoder = T::Decoder::upstream("m", Some(KEY));
    let mut stream = Transducer::new(decoder, T::Encoder::client(), bound);
    for chunk in chunks {
        let out = stream.feed(chunk);
        assert!(out.is_empty() || out.ends_with(b"\n\n"), "output ends mid-event");
        assert!(stream.buffered_bytes() <= bound, "the parser holds more than the bound");
    }
    let out = stream.finish();
    assert!(out.is_empty() || out.ends_with(b"\n\n"), "output ends mid-event");
    assert!(stream.finished(), "upstream EOF always ends the client's stream");
    assert!(stream.feed(b"data: {}\n\n").is_empty(), "bytes after the end");
}
