//! OpenAI Responses SSE events, as bytes (twin of python/hydra_proxy/responses/output.py).
//!
//! Every event is `event: <type>\ndata: <compact JSON>\n\n` with `type` and
//! `sequence_number` first. Items are written once, as JSON text, and the same text is
//! repeated in the `output` of the closing `response` object.

use crate::json::write::{items, str_member, u128_member, u64_member};
use crate::json::write::{write_str, write_u64};

pub const PING: &[u8] = b": ping\n\n";

pub fn event_start(out: &mut Vec<u8>, kind: &str, sequence_number: u64) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\ndata: {\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"sequence_number\":");
    write_u64(out, sequence_number);
    out.push(b',');
}

pub const EVENT_END: &[u8] = b"}\n\n";

/// The closing parts of a `response` object other than its output.
pub struct ResponseTail<'a> {
    pub error: Option<(&'a str, &'a str)>,
    pub incomplete_reason: Option<&'a str>,
    /// (input incl. cache, cached, cache write, output)
    pub usage: Option<(u128, u64, u64, u64)>,
}

/// A `response` object; `output` is its items' JSON texts joined with commas, `echo` the
/// inside of the request echo's JSON object.
#[allow(clippy::too_many_arguments)]
pub fn response_object(
    out: &mut Vec<u8>,
    response_id: &str,
    created_at: u64,
    status: &str,
    model: &str,
    output: &[u8],
    echo: &[u8],
    tail: &ResponseTail<'_>,
) {
    str_member(out, b"{\"id\":", response_id);
    u64_member(out, b",\"object\":\"response\",\"created_at\":", created_at);
    out.extend_from_slice(b",\"status\":\"");
    out.extend_from_slice(status.as_bytes());
    out.extend_from_slice(b"\",\"background\":false,\"error\":");
    match tail.error {
        Some((code, message)) => error(out, code, message),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"incomplete_details\":");
    match tail.incomplete_reason {
        Some(reason) => {
            out.extend_from_slice(b"{\"reason\":\"");
            out.extend_from_slice(reason.as_bytes());
            out.extend_from_slice(b"\"}");
        }
        None => out.extend_from_slice(b"null"),
    }
    str_member(out, b",\"model\":", model);
    out.extend_from_slice(b",\"output\":[");
    out.extend_from_slice(output);
    out.push(b']');
    if !echo.is_empty() {
        out.push(b',');
        out.extend_from_slice(echo);
    }
    out.extend_from_slice(b",\"usage\":");
    match tail.usage {
        Some((input, cached, written, output)) => usage(out, input, cached, written, output),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

pub fn response_event(out: &mut Vec<u8>, kind: &str, sequence_number: u64, response: &[u8]) {
    event_start(out, kind, sequence_number);
    out.extend_from_slice(b"\"response\":");
    out.extend_from_slice(response);
    out.extend_from_slice(EVENT_END);
}

pub fn item_event(
    out: &mut Vec<u8>,
    kind: &str,
    sequence_number: u64,
    output_index: u64,
    item: &[u8],
) {
    event_start(out, kind, sequence_number);
    u64_member(out, b"\"output_index\":", output_index);
    out.extend_from_slice(b",\"item\":");
    out.extend_from_slice(item);
    out.extend_from_slice(EVENT_END);
}

fn in_item(out: &mut Vec<u8>, item_id: &str, output_index: u64) {
    str_member(out, b"\"item_id\":", item_id);
    u64_member(out, b",\"output_index\":", output_index);
}

/// An `output_text` part; `annotations` is their JSON texts joined with commas.
pub fn text_part(out: &mut Vec<u8>, text: &str, annotations: &[u8]) {
    out.extend_from_slice(b"{\"type\":\"output_text\",\"annotations\":[");
    out.extend_from_slice(annotations);
    str_member(out, b"],\"logprobs\":[],\"text\":", text);
    out.push(b'}');
}

/// A `summary_text` part of a reasoning item's summary.
fn summary_text_part(out: &mut Vec<u8>, text: &str) {
    str_member(out, b"{\"type\":\"summary_text\",\"text\":", text);
    out.push(b'}');
}

pub fn url_citation(out: &mut Vec<u8>, start: u64, end: u64, title: &str, url: &str) {
    u64_member(out, b"{\"type\":\"url_citation\",\"end_index\":", end);
    u64_member(out, b",\"start_index\":", start);
    str_member(out, b",\"title\":", title);
    str_member(out, b",\"url\":", url);
    out.push(b'}');
}

pub fn annotation_added(
    out: &mut Vec<u8>,
    sequence_number: u64,
    item_id: &str,
    output_index: u64,
    index: u64,
    annotation: &[u8],
) {
    event_start(
        out,
        "response.output_text.annotation.added",
        sequence_number,
    );
    in_item(out, item_id, output_index);
    u64_member(out, b",\"content_index\":0,\"annotation_index\":", index);
    out.extend_from_slice(b",\"annotation\":");
    out.extend_from_slice(annotation);
    out.extend_from_slice(EVENT_END);
}

/// Defines the events about one item's content, summary, call input or search progress.
/// In a definition `..` stands for the parameters all of them share, `sequence_number: u64,
/// item_id: &str, output_index: u64`; each event writes its start, the item, the members
/// its body writes, and its end.
macro_rules! item_events {
    ($(
        $(#[$doc:meta])*
        $vis:vis fn $name:ident(
            $out:ident: &mut Vec<u8>,
            $kind:ident: &str,
            $($before:ident: $before_ty:ty,)*
            ..
            $(, $after:ident: $after_ty:ty)*
        ) $members:block
    )*) => {$(
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        $vis fn $name(
            $out: &mut Vec<u8>,
            $kind: &str,
            $($before: $before_ty,)*
            sequence_number: u64,
            item_id: &str,
            output_index: u64,
            $($after: $after_ty,)*
        ) {
            event_start($out, $kind, sequence_number);
            in_item($out, item_id, output_index);
            $members
            $out.extend_from_slice(EVENT_END);
        }
    )*};
}

item_events! {
    pub fn content_part(out: &mut Vec<u8>, kind: &str, .., text: &str, annotations: &[u8]) {
        out.extend_from_slice(b",\"content_index\":0,\"part\":");
        text_part(out, text, annotations);
    }

    /// An `output_text` delta (`field` `delta`) or done (`text`) event.
    pub fn output_text(out: &mut Vec<u8>, kind: &str, field: &str, .., text: &str) {
        out.extend_from_slice(b",\"content_index\":0");
        string_field(out, field, text);
        out.extend_from_slice(b",\"logprobs\":[]");
    }

    pub fn summary_part(out: &mut Vec<u8>, kind: &str, .., index: u64, text: &str) {
        u64_member(out, b",\"summary_index\":", index);
        out.extend_from_slice(b",\"part\":");
        summary_text_part(out, text);
    }

    /// A `reasoning_summary_text` delta (`field` `delta`) or done (`text`) event.
    pub fn summary_text(out: &mut Vec<u8>, kind: &str, field: &str, .., index: u64, text: &str) {
        u64_member(out, b",\"summary_index\":", index);
        string_field(out, field, text);
    }

    /// A function call's arguments or a custom tool call's input: delta or done.
    pub fn call_input(out: &mut Vec<u8>, kind: &str, field: &str, .., text: &str) {
        string_field(out, field, text);
    }

    /// A web search's progress: in_progress, searching, completed.
    pub fn web_search_event(out: &mut Vec<u8>, kind: &str, ..) {}
}

/// `,"<field>":` and `text` as a JSON string.
fn string_field(out: &mut Vec<u8>, field: &str, text: &str) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(field.as_bytes());
    out.extend_from_slice(b"\":");
    write_str(out, text);
}

/// An assistant `message` item; `text` None for the empty item of output_item.added.
pub fn message_item(
    out: &mut Vec<u8>,
    item_id: &str,
    status: &str,
    text: Option<&str>,
    annotations: &[u8],
) {
    str_member(out, b"{\"id\":", item_id);
    out.extend_from_slice(b",\"type\":\"message\",\"status\":\"");
    out.extend_from_slice(status.as_bytes());
    out.extend_from_slice(b"\",\"content\":[");
    if let Some(text) = text {
        text_part(out, text, annotations);
    }
    out.extend_from_slice(b"],\"role\":\"assistant\"}");
}

/// A `function_call` (`custom` false: `text` is the arguments) or `custom_tool_call`
/// (`text` is the input) item.
#[allow(clippy::too_many_arguments)]
pub fn call_item(
    out: &mut Vec<u8>,
    custom: bool,
    item_id: &str,
    status: &str,
    text: &str,
    call_id: &str,
    name: &str,
    namespace: Option<&str>,
) {
    str_member(out, b"{\"id\":", item_id);
    if custom {
        out.extend_from_slice(b",\"type\":\"custom_tool_call\",\"status\":\"");
    } else {
        out.extend_from_slice(b",\"type\":\"function_call\",\"status\":\"");
    }
    out.extend_from_slice(status.as_bytes());
    out.extend_from_slice(if custom {
        b"\",\"input\":"
    } else {
        b"\",\"arguments\":"
    });
    write_str(out, text);
    str_member(out, b",\"call_id\":", call_id);
    str_member(out, b",\"name\":", name);
    if let Some(namespace) = namespace {
        str_member(out, b",\"namespace\":", namespace);
    }
    out.push(b'}');
}

/// The empty `reasoning` item of output_item.added.
pub fn reasoning_item_added(out: &mut Vec<u8>, item_id: &str) {
    str_member(out, b"{\"id\":", item_id);
    out.extend_from_slice(b",\"type\":\"reasoning\",\"summary\":[]}");
}

/// A finished `reasoning` item (the layout of `responses.response.reasoning_item`).
pub fn reasoning_item<'a>(
    out: &mut Vec<u8>,
    item_id: &str,
    summaries: impl Iterator<Item = &'a str>,
    encrypted: Option<&str>,
) {
    str_member(out, b"{\"id\":", item_id);
    out.extend_from_slice(b",\"type\":\"reasoning\",\"summary\":[");
    items(out, summaries, summary_text_part);
    out.push(b']');
    if let Some(encrypted) = encrypted {
        str_member(out, b",\"encrypted_content\":", encrypted);
    }
    out.push(b'}');
}

/// Responses `usage` (the layout of `responses.response.responses_usage`; no reasoning
/// token count reaches the stream).
pub fn usage(out: &mut Vec<u8>, input: u128, cached: u64, written: u64, output: u64) {
    u128_member(out, b"{\"input_tokens\":", input);
    u64_member(
        out,
        b",\"input_tokens_details\":{\"cached_tokens\":",
        cached,
    );
    u64_member(out, b",\"cache_write_tokens\":", written);
    u64_member(out, b"},\"output_tokens\":", output);
    u128_member(
        out,
        b",\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":",
        input + u128::from(output),
    );
    out.push(b'}');
}

pub fn error(out: &mut Vec<u8>, code: &str, message: &str) {
    out.extend_from_slice(b"{\"code\":\"");
    out.extend_from_slice(code.as_bytes());
    str_member(out, b"\",\"message\":", message);
    out.push(b'}');
}

/// A `web_search_call` item; `query` `None` for the item of output_item.added; `sources`
/// the URLs of the pages the search found.
pub fn web_search_item(
    out: &mut Vec<u8>,
    item_id: &str,
    status: &str,
    query: Option<&str>,
    sources: &[String],
) {
    str_member(out, b"{\"id\":", item_id);
    out.extend_from_slice(b",\"type\":\"web_search_call\",\"status\":\"");
    out.extend_from_slice(status.as_bytes());
    out.push(b'"');
    if let Some(query) = query {
        str_member(out, b",\"action\":{\"type\":\"search\",\"query\":", query);
        if !sources.is_empty() {
            out.extend_from_slice(b",\"sources\":[");
            items(out, sources, |out, url| {
                str_member(out, b"{\"type\":\"url\",\"url\":", url);
                out.push(b'}');
            });
            out.push(b']');
        }
        out.push(b'}');
    }
    out.push(b'}');
}
