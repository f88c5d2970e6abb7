//! What every target shares: how the fuzzer's bytes become a bound and chunks.
#![allow(dead_code)]

use _native::responses::ResponsesOptions;
use _native::stream::DEFAULT_MAX_EVENT_BYTES;

pub const KEY: &[u8] = b"fuzz-key";

pub fn options() -> ResponsesOptions<'static> {
    ResponsesOptions {
        echo: "{}",
        signing_key: Some(KEY),
        ..ResponsesOptions::default()
    }
}

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
