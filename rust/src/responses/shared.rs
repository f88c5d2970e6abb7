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
