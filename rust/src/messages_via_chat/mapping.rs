//! Field mappings (twin of python/hydra_proxy/messages_via_chat/mapping.py).

/// Anthropic stop_reason for an OpenAI finish_reason; tool calls win over a plain stop
/// (some upstreams end a tool-calling turn with "stop", and Claude Code only runs tools on
/// "tool_use").
pub fn stop_reason(finish_reason: Option<&str>, has_tool_calls: bool) -> &'static str {
    let mapped = match finish_reason.unwrap_or("stop") {
        "length" => "max_tokens",
        "tool_calls" | "function_call" => "tool_use",
        "content_filter" => "refusal",
        _ => "end_turn",
    };
    if has_tool_calls && mapped == "end_turn" {
        "tool_use"
    } else {
        mapped
    }
}

/// OpenAI prompt_tokens include cached tokens; Anthropic input_tokens exclude them.
pub fn input_tokens(prompt_tokens: u64, cached_tokens: u64) -> u64 {
    prompt_tokens.saturating_sub(cached_tokens)
}
