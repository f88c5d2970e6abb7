//! The pieces of python/hydra_proxy/responses/{response,reasoning,errors}.py the stream
//! encoder needs, mirrored once here: item ids, the status of a stop reason, the client
//! reasoning carrier and the error codes.

use crate::continuation::{self, Block};

/// Anthropic stop reason -> `incomplete_details.reason` (responses.response.INCOMPLETE_REASONS).
pub const INCOMPLETE_REASONS: [(&str, &str); 3] = [
    ("max_tokens", "max_output_tokens"),
    ("model_context_window_exceeded", "max_output_tokens"),
    ("refusal", "content_filter"),
];

/// Anthropic error type -> `ResponseError.code` (responses.errors.RESPONSE_ERROR_CODES).
pub const RESPONSE_ERROR_CODES: [(&str, &str); 3] = [
    ("rate_limit_error", "rate_limit_exceeded"),
    ("invalid_request_error", "invalid_prompt"),
    ("request_too_large", "invalid_prompt"),
];

/// The client carrier's prefix (responses.reasoning.CARRIER_PREFIX).
pub const CARRIER_PREFIX: &str = "hydra-reasoning:v1:";

/// A reproducible output item id: `<prefix>_<response id without resp_>_<index>`.
pub fn item_id(prefix: &str, response_id: &str, output_index: u64) -> String {
    let rest = response_id.strip_prefix("resp_").unwrap_or(response_id);
    format!("{prefix}_{rest}_{output_index}")
}

pub fn incomplete_reason(stop_reason: Option<&str>) -> Option<&'static str> {
    let stop_reason = stop_reason?;
    INCOMPLETE_REASONS
        .iter()
        .find(|(reason, _)| *reason == stop_reason)
        .map(|(_, incomplete)| *incomplete)
}

pub fn response_error_code(error_type: &str) -> &'static str {
    RESPONSE_ERROR_CODES
        .iter()
        .find(|(kind, _)| *kind == error_type)
        .map_or("server_error", |(_, code)| *code)
}

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

/// The default message of a failed upstream response (responses.errors.MSG_UPSTREAM_FAILED).
pub const MSG_UPSTREAM_FAILED: &str = "the upstream failed to generate a response";

/// (Anthropic error type, message) of a Responses `error` object
/// (responses.errors.upstream_failure).
pub fn upstream_failure(code: Option<&str>, message: Option<&str>) -> (&'static str, String) {
    let error_type = match code {
        None | Some("server_error") => "api_error",
        Some("rate_limit_exceeded") => "rate_limit_error",
        Some("vector_store_timeout") => "timeout_error",
        Some(_) => "invalid_request_error",
    };
    let message = message
        .filter(|m| !m.is_empty())
        .unwrap_or(MSG_UPSTREAM_FAILED);
    (error_type, message.to_owned())
}

/// `<namespace>__<name>`, shortened with a hash when too long (responses.tools.flatten,
/// without the names already taken: a stream has no tool list).
pub fn flatten(namespace: &str, name: &str) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write;
    let flat = format!("{namespace}__{name}");
    if flat.chars().count() <= 64 {
        return flat;
    }
    let digest = Sha256::digest(flat.as_bytes());
    let mut out: String = flat.chars().take(64 - 9).collect();
    out.push('_');
    for byte in &digest[..4] {
        // (Writing to a String cannot fail.)
        let _ = write!(out, "{byte:02x}");
    }
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

pub use crate::json::parse;
