//! Chat <-> Anthropic field mappings (twin of python/hydra_proxy/chat/mapping.py): the one
//! definition of each table, for both directions.

/// OpenAI finish_reason -> Anthropic stop_reason (anything else: "end_turn").
pub const STOP_REASONS: [(&str, &str); 5] = [
    ("stop", "end_turn"),
    ("length", "max_tokens"),
    ("tool_calls", "tool_use"),
    ("function_call", "tool_use"),
    ("content_filter", "refusal"),
];

/// Anthropic stop_reason -> OpenAI finish_reason (anything else: "stop").
pub const FINISH_REASONS: [(&str, &str); 7] = [
    ("end_turn", "stop"),
    ("stop_sequence", "stop"),
    ("pause_turn", "stop"),
    ("max_tokens", "length"),
    ("model_context_window_exceeded", "length"),
    ("tool_use", "tool_calls"),
    ("refusal", "content_filter"),
];

fn lookup(table: &[(&str, &'static str)], key: &str, default: &'static str) -> &'static str {
    table
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(default, |(_, v)| v)
}

/// Anthropic stop_reason for an OpenAI finish_reason; tool calls win over a plain stop
/// (some upstreams end a tool-calling turn with "stop", and Claude Code only runs tools on
/// "tool_use").
pub fn stop_reason(finish_reason: Option<&str>, has_tool_calls: bool) -> &'static str {
    let mapped = lookup(&STOP_REASONS, finish_reason.unwrap_or("stop"), "end_turn");
    if has_tool_calls && mapped == "end_turn" {
        "tool_use"
    } else {
        mapped
    }
}

/// OpenAI finish_reason for an Anthropic stop_reason.
pub fn finish_reason(stop_reason: Option<&str>) -> &'static str {
    lookup(&FINISH_REASONS, stop_reason.unwrap_or("end_turn"), "stop")
}

/// OpenAI prompt_tokens include cached tokens; Anthropic input_tokens exclude them.
pub fn input_tokens(prompt_tokens: u64, cached_tokens: u64) -> u64 {
    prompt_tokens.saturating_sub(cached_tokens)
}
