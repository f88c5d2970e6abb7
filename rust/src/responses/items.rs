//! The pieces of a `response` the stream encoder builds as the non-streamed writer does
//! (twin of python/hydra_proxy/responses/items.py): item ids and the status of a stop
//! reason.

/// Anthropic stop reason -> `incomplete_details.reason` (responses.items.INCOMPLETE_REASONS).
pub const INCOMPLETE_REASONS: [(&str, &str); 3] = [
    ("max_tokens", "max_output_tokens"),
    ("model_context_window_exceeded", "max_output_tokens"),
    ("refusal", "content_filter"),
];

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
