//! The carriers that keep thinking replayable with `store: false` (twin of
//! python/hydra_proxy/responses/reasoning.py): the client carrier a reasoning item's
//! `encrypted_content` holds, and the signature that carries an upstream's reasoning item.

use crate::continuation::{self, Block};

/// The client carrier's prefix (responses.reasoning.CARRIER_PREFIX).
pub const CARRIER_PREFIX: &str = "hydra-reasoning:v1:";

/// The `encrypted_content` for canonical thinking/redacted_thinking blocks
/// (responses.reasoning.encode_carrier).
pub fn encode_carrier(blocks: &[Block], key: &[u8]) -> String {
    let mut out = String::from(CARRIER_PREFIX);
    for block in blocks {
        if let Block::Thinking { text, .. } = block {
            out.push_str(text);
        }
    }
    out.push_str(&continuation::encode(blocks, key));
    out
}

/// The thinking block signature that carries an upstream OpenAI reasoning item
/// (responses.reasoning.sign_upstream_item).
pub fn sign_upstream_item(thinking: &str, item_id: &str, encrypted: &str, key: &[u8]) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use hmac::{Hmac, Mac};
    let mut item = Vec::with_capacity(item_id.len() + encrypted.len() + 32);
    item.extend_from_slice(b"{\"id\":");
    crate::json::write::write_str(&mut item, item_id);
    item.extend_from_slice(b",\"encrypted_content\":");
    crate::json::write::write_str(&mut item, encrypted);
    item.push(b'}');
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(b"hydra1.rs1\0");
    mac.update(&item);
    mac.update(b"\0");
    mac.update(thinking.as_bytes());
    let digest = mac.finalize().into_bytes();
    let mut out = String::from("hydra1.rs1.");
    URL_SAFE_NO_PAD.encode_string(&item, &mut out);
    out.push('.');
    URL_SAFE_NO_PAD.encode_string(&digest[..18], &mut out);
    out
}
