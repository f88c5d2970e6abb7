//! The continuation suffix (twin of python/hydra_proxy/continuation.py, which documents the
//! format): Claude's signed and redacted thinking, carried through Chat clients inside
//! `reasoning_content`. The native side only writes it; requests are parsed in Python.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::json::write::write_str;

pub const PREFIX: &str = "\n\n[[hydra-continuation:v1:";

pub enum Block {
    Thinking { text: String, signature: String },
    Redacted { data: String },
}

fn blocks_json(blocks: &[Block]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * blocks.len() + 2);
    out.push(b'[');
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match block {
            Block::Thinking { text, signature } => {
                out.extend_from_slice(b"{\"thinking\":");
                out.extend_from_slice(text.chars().count().to_string().as_bytes());
                out.extend_from_slice(b",\"signature\":");
                write_str(&mut out, signature);
                out.push(b'}');
            }
            Block::Redacted { data } => {
                out.extend_from_slice(b"{\"redacted\":");
                write_str(&mut out, data);
                out.push(b'}');
            }
        }
    }
    out.push(b']');
    out
}

/// The suffix for these blocks; the reasoning text itself goes before it, unchanged.
pub fn encode(blocks: &[Block], key: &[u8]) -> String {
    let encoded = blocks_json(blocks);
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(b"hydra-continuation:v1\0");
    mac.update(&encoded);
    mac.update(b"\0");
    for block in blocks {
        if let Block::Thinking { text, .. } = block {
            mac.update(text.as_bytes());
        }
    }
    let digest = mac.finalize().into_bytes();
    let mut suffix = String::from(PREFIX);
    URL_SAFE_NO_PAD.encode_string(&encoded, &mut suffix);
    suffix.push('.');
    URL_SAFE_NO_PAD.encode_string(&digest[..18], &mut suffix);
    suffix.push_str("]]");
    suffix
}
