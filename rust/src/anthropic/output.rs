//! Anthropic Messages SSE events, as bytes (twin of python/hydra_proxy/anthropic/output.py).

use crate::json::write::{str_member, u64_member};
use crate::json::write::{write_str, write_u64};

pub fn message_start(out: &mut Vec<u8>, message_id: &str, model: &str, input_tokens: u64) {
    str_member(
        out,
        b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":",
        message_id,
    );
    str_member(
        out,
        b",\"type\":\"message\",\"role\":\"assistant\",\"model\":",
        model,
    );
    out.extend_from_slice(
        b",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":",
    );
    usage(out, input_tokens, 0, 0);
    out.extend_from_slice(b"}}\n\n");
}

/// A usage object (the proxy never writes to the cache).
fn usage(out: &mut Vec<u8>, input: u64, cache_read: u64, output: u64) {
    u64_member(out, b"{\"input_tokens\":", input);
    out.extend_from_slice(b",\"cache_creation_input_tokens\":0");
    u64_member(out, b",\"cache_read_input_tokens\":", cache_read);
    u64_member(out, b",\"output_tokens\":", output);
    out.push(b'}');
}

fn block_start_prefix(out: &mut Vec<u8>, index: u64) {
    out.extend_from_slice(
        b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":",
    );
    write_u64(out, index);
}

pub fn text_start(out: &mut Vec<u8>, index: u64) {
    block_start_prefix(out, index);
    out.extend_from_slice(b",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
}

pub fn thinking_start(out: &mut Vec<u8>, index: u64) {
    block_start_prefix(out, index);
    out.extend_from_slice(
        b",\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
    );
}

pub fn redacted_thinking_start(out: &mut Vec<u8>, index: u64, data: &str) {
    block_start_prefix(out, index);
    out.extend_from_slice(b",\"content_block\":{\"type\":\"redacted_thinking\",\"data\":");
    write_str(out, data);
    out.extend_from_slice(b"}}\n\n");
}

pub fn tool_use_start(out: &mut Vec<u8>, index: u64, id: &str, name: &str) {
    call_start(out, index, "tool_use", id, name);
}

pub fn server_tool_use_start(out: &mut Vec<u8>, index: u64, id: &str, name: &str) {
    call_start(out, index, "server_tool_use", id, name);
}

/// The start of a block of type `block_type` that calls a tool: tool_use, server_tool_use.
fn call_start(out: &mut Vec<u8>, index: u64, block_type: &str, id: &str, name: &str) {
    block_start_prefix(out, index);
    out.extend_from_slice(b",\"content_block\":{\"type\":\"");
    out.extend_from_slice(block_type.as_bytes());
    str_member(out, b"\",\"id\":", id);
    str_member(out, b",\"name\":", name);
    out.extend_from_slice(b",\"input\":{}}}\n\n");
}

/// One result of a web_search_tool_result (no encrypted content: these results come from
/// another provider, and only Anthropic reads it), after a comma unless it is the first.
pub fn web_search_result(out: &mut Vec<u8>, url: &str, title: &str) {
    if !out.is_empty() {
        out.push(b',');
    }
    str_member(out, b"{\"type\":\"web_search_result\",\"title\":", title);
    str_member(out, b",\"url\":", url);
    out.extend_from_slice(b",\"encrypted_content\":\"\",\"page_age\":null}");
}

/// The whole results block, its start and its stop (`results`: the joined results).
pub fn web_search_tool_result(out: &mut Vec<u8>, index: u64, tool_use_id: &str, results: &[u8]) {
    block_start_prefix(out, index);
    str_member(
        out,
        b",\"content_block\":{\"type\":\"web_search_tool_result\",\"tool_use_id\":",
        tool_use_id,
    );
    out.extend_from_slice(b",\"content\":[");
    out.extend_from_slice(results);
    out.extend_from_slice(b"]}}\n\n");
    block_stop(out, index);
}

/// A content_block_delta event up to its delta's value: `kind_and_field` is the delta's
/// type, a comma and the value's key.
#[inline]
fn delta_prefix(out: &mut Vec<u8>, index: u64, kind_and_field: &[u8]) {
    out.extend_from_slice(
        b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":",
    );
    write_u64(out, index);
    out.extend_from_slice(b",\"delta\":{\"type\":");
    out.extend_from_slice(kind_and_field);
}

fn delta(out: &mut Vec<u8>, index: u64, kind_and_field: &[u8], value: &str) {
    delta_prefix(out, index, kind_and_field);
    write_str(out, value);
    out.extend_from_slice(b"}}\n\n");
}

pub fn text_delta(out: &mut Vec<u8>, index: u64, text: &str) {
    delta(out, index, b"\"text_delta\",\"text\":", text);
}

pub fn thinking_delta(out: &mut Vec<u8>, index: u64, thinking: &str) {
    delta(out, index, b"\"thinking_delta\",\"thinking\":", thinking);
}

pub fn input_json_delta(out: &mut Vec<u8>, index: u64, partial_json: &str) {
    delta(
        out,
        index,
        b"\"input_json_delta\",\"partial_json\":",
        partial_json,
    );
}

pub fn signature_delta(out: &mut Vec<u8>, index: u64, signature: &str) {
    delta(out, index, b"\"signature_delta\",\"signature\":", signature);
}

/// `citation` is JSON text, written as it is.
pub fn citations_delta(out: &mut Vec<u8>, index: u64, citation: &str) {
    delta_prefix(out, index, b"\"citations_delta\",\"citation\":");
    out.extend_from_slice(citation.as_bytes());
    out.extend_from_slice(b"}}\n\n");
}

pub fn block_stop(out: &mut Vec<u8>, index: u64) {
    out.extend_from_slice(
        b"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":",
    );
    write_u64(out, index);
    out.extend_from_slice(b"}\n\n");
}

pub fn message_delta(
    out: &mut Vec<u8>,
    stop_reason: &str,
    input: u64,
    cache_read: u64,
    output: u64,
) {
    out.extend_from_slice(
        b"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"",
    );
    out.extend_from_slice(stop_reason.as_bytes());
    out.extend_from_slice(b"\",\"stop_sequence\":null},\"usage\":");
    usage(out, input, cache_read, output);
    out.extend_from_slice(b"}\n\n");
}

pub const MESSAGE_STOP: &[u8] = b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

pub const PING: &[u8] = b"event: ping\ndata: {\"type\":\"ping\"}\n\n";

pub fn error(out: &mut Vec<u8>, error_type: &str, message: &str) {
    out.extend_from_slice(b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"");
    out.extend_from_slice(error_type.as_bytes());
    str_member(out, b"\",\"message\":", message);
    out.extend_from_slice(b"}}\n\n");
}
