//! Gemini finish reasons and usage in Anthropic terms (twin of
//! python/hydra_proxy/gemini/mapping.py, which documents the decisions): one table per
//! language, for the stream decoder here and the non-streamed reader in Python.

/// Content stopped by Google's filters: `refusal`.
pub const REFUSAL_FINISH_REASONS: [&str; 8] = [
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
];

/// The model's tool call was thrown away: an `api_error` (the client retries).
pub const ERROR_FINISH_REASONS: [&str; 3] = [
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
];

/// The Anthropic stop_reason for a Gemini finishReason (not one of ERROR_FINISH_REASONS).
pub fn stop_reason(finish_reason: Option<&str>, has_tool_calls: bool) -> &'static str {
    match finish_reason {
        Some("MAX_TOKENS") => "max_tokens",
        Some(reason) if REFUSAL_FINISH_REASONS.contains(&reason) => "refusal",
        _ if has_tool_calls => "tool_use",
        _ => "end_turn",
    }
}

/// The api_error message for a finishReason that means "the tool call was lost", else None.
pub fn finish_error(finish_reason: &str, finish_message: Option<&str>) -> Option<String> {
    if !ERROR_FINISH_REASONS.contains(&finish_reason) {
        return None;
    }
    let mut message =
        format!("Gemini discarded the model's tool call (finishReason {finish_reason})");
    if let Some(detail) = finish_message.filter(|m| !m.is_empty()) {
        message.push_str(": ");
        message.push_str(detail);
    }
    message.push_str("; retrying the request usually helps");
    Some(message)
}

/// (input_tokens, output_tokens, cache_read_input_tokens) for Gemini's counts: the prompt
/// count includes the cached part, Anthropic's input_tokens exclude it; thinking is output.
pub fn anthropic_usage(
    prompt: u64,
    cached: u64,
    candidates: u64,
    thoughts: u64,
) -> (u64, u64, u64) {
    let cached = if prompt > 0 {
        cached.min(prompt)
    } else {
        cached
    };
    (
        prompt.saturating_sub(cached),
        candidates.saturating_add(thoughts),
        cached,
    )
}
