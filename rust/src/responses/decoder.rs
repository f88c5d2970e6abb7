//! OpenAI Responses stream -> canonical events (twin of
//! python/hydra_proxy/responses/decoder.py, which documents the grammar).
//!
//! Its quirks: blocks come from output items (message content parts, reasoning items,
//! function and custom tool calls, web search calls and their sources; other hosted tool
//! items are skipped), one open at a time; url_citation annotations are citations;
//! a reasoning item's replay state (its id and encrypted_content) is signed into the
//! thinking block's signature; custom tool input is streamed as `{"input": "..."}`.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::chunk::{get_dict, get_list, get_str, texts, uint};
use super::errors::upstream_failure;
use super::reasoning::sign_upstream_item;
use super::tools::flatten;
use crate::json::parse;
use crate::json::write::write_str;
use crate::json::{self, trim_json_ws};
use crate::signature::sign_thinking;
use crate::stream::messages::{MSG_BAD_SHAPE, MSG_CUT_OFF, MSG_INVALID_JSON};
use crate::stream::{BlockKind, Decoder, Event, Sink, Usage};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
    Tool,
    Custom,
    Search,
    Results,
}

#[derive(Clone, Copy)]
struct Open {
    block: u64,
    kind: Kind,
    index: i128,
    part: u64,
}

pub struct ResponsesDecoder {
    message_id: String,
    key: Option<Vec<u8>>,
    started: bool,
    ended: bool,
    blocks: u64,
    has_call: bool,
    open: Option<Open>,
    /// The open tool block got argument/input deltas.
    streamed: bool,
    /// The last output index that had text.
    texted: Option<i128>,
    /// The reasoning item being read: its output index, text so far, last summary index.
    reasoning: Option<i128>,
    thinking: String,
    summary_index: Option<u64>,
}

/// `text` escaped as inside a JSON string (escaping is per character).
fn json_fragment(out: &mut String, text: &str) {
    let mut quoted = Vec::with_capacity(text.len() + 2);
    write_str(&mut quoted, text);
    out.push_str(std::str::from_utf8(&quoted[1..quoted.len() - 1]).expect("escaped UTF-8"));
}

impl ResponsesDecoder {
    pub fn new(message_id: &str, signing_key: Option<&[u8]>) -> Self {
        ResponsesDecoder {
            message_id: message_id.to_owned(),
            key: signing_key.filter(|k| !k.is_empty()).map(<[u8]>::to_vec),
            started: false,
            ended: false,
            blocks: 0,
            has_call: false,
            open: None,
            streamed: false,
            texted: None,
            reasoning: None,
            thinking: String::new(),
            summary_index: None,
        }
    }
}

impl Decoder for ResponsesDecoder {
    fn event<S: Sink>(&mut self, event: Option<&[u8]>, data: &[u8], emit: &mut S) {
        let trimmed = trim_json_ws(data);
        if self.ended {
            return;
        }
        let error_event = event == Some(&b"error"[..]);
        if trimmed.is_empty() || trimmed == b"[DONE]" {
            if error_event {
                let (kind, message) = upstream_failure(None, None);
                self.fail(kind, &message, emit);
            }
            return;
        }
        let text = json::text(data);
        let Some(payload) = parse(&text) else {
            return self.not_json(error_event, &text, emit);
        };
        let Some(payload) = payload.as_object() else {
            return self.fail("api_error", MSG_BAD_SHAPE, emit);
        };
        let kind: Option<Cow<'_, str>> = match get_str(payload, "type") {
            Some(kind) => Some(Cow::Borrowed(kind)),
            None => event.map(String::from_utf8_lossy),
        };
        let kind = kind.as_deref();
        if kind == Some("error")
            || (kind.is_none() && payload.get("error").is_some_and(Value::is_object))
        {
            let error = match payload.get("error").and_then(Value::as_object) {
                Some(error) if !error.is_empty() => error,
                _ => payload,
            };
            return self.upstream_error(error, emit);
        }
        if !self.started {
            self.begin(payload, emit);
        }
        let index = uint(payload, "output_index").map_or(-1, i128::from);
        match kind {
            Some("response.output_text.delta" | "response.refusal.delta") => {
                self.text_delta(payload, index, emit);
            }
            Some(
                kind @ ("response.reasoning_summary_text.delta" | "response.reasoning_text.delta"),
            ) => self.thinking_delta(kind, payload, index, emit),
            Some("response.function_call_arguments.delta") => {
                self.arguments_delta(payload, index, emit);
            }
            Some("response.custom_tool_call_input.delta") => self.input_delta(payload, index, emit),
            Some("response.output_text.annotation.added") => {
                self.annotation(payload, index, emit);
            }
            Some("response.output_item.added") => {
                self.item_added(get_dict(payload, "item"), index, emit);
            }
            Some("response.output_item.done") => {
                self.item_done(get_dict(payload, "item"), index, emit);
            }
            Some("response.completed" | "response.incomplete") => {
                self.end(get_dict(payload, "response"), emit);
            }
            Some("response.failed") => {
                let error = get_dict(get_dict(payload, "response"), "error");
                self.upstream_error(error, emit);
            }
            _ => {}
        }
    }

    fn finish<S: Sink>(&mut self, emit: &mut S) {
        self.fail("api_error", MSG_CUT_OFF, emit);
    }
}

impl ResponsesDecoder {
    fn start<S: Sink>(
        &mut self,
        kind: Kind,
        index: i128,
        part: u64,
        block: BlockKind<'_>,
        emit: &mut S,
    ) -> u64 {
        self.close(emit);
        let id = self.blocks;
        self.blocks += 1;
        emit.emit(Event::BlockStart {
            block: id,
            kind: block,
        });
        self.open = Some(Open {
            block: id,
            kind,
            index,
            part,
        });
        self.streamed = false;
        id
    }

    fn close<S: Sink>(&mut self, emit: &mut S) {
        if let Some(open) = self.open.take() {
            emit.emit(Event::BlockStop { block: open.block });
        }
    }

    /// The open block's id if it is of `kind` and belongs to output item `index`.
    fn is_open(&self, kind: Kind, index: i128) -> Option<u64> {
        self.open
            .filter(|open| open.kind == kind && open.index == index)
            .map(|open| open.block)
    }

    fn text_delta<S: Sink>(&mut self, payload: &Map<String, Value>, index: i128, emit: &mut S) {
        let Some(delta) = get_str(payload, "delta").filter(|d| !d.is_empty()) else {
            return;
        };
        let part = uint(payload, "content_index").unwrap_or(0);
        let block = match (self.is_open(Kind::Text, index), self.open) {
            (Some(block), Some(open)) if open.part == part => block,
            _ => self.start(Kind::Text, index, part, BlockKind::Text, emit),
        };
        self.texted = Some(index);
        emit.emit(Event::TextDelta { block, text: delta });
    }

    fn thinking_delta<S: Sink>(
        &mut self,
        kind: &str,
        payload: &Map<String, Value>,
        index: i128,
        emit: &mut S,
    ) {
        let Some(delta) = get_str(payload, "delta").filter(|d| !d.is_empty()) else {
            return;
        };
        if self.reasoning != Some(index) {
            return;
        }
        let block = match self.is_open(Kind::Thinking, index) {
            Some(block) => block,
            None => self.start(Kind::Thinking, index, 0, BlockKind::Thinking, emit),
        };
        if kind == "response.reasoning_summary_text.delta" {
            let summary = uint(payload, "summary_index").unwrap_or(0);
            if !self.thinking.is_empty() && Some(summary) != self.summary_index {
                self.thinking.push_str("\n\n");
                emit.emit(Event::ThinkingDelta {
                    block,
                    thinking: "\n\n",
                });
            }
            self.summary_index = Some(summary);
        }
        self.thinking.push_str(delta);
        emit.emit(Event::ThinkingDelta {
            block,
            thinking: delta,
        });
    }

    fn arguments_delta<S: Sink>(
        &mut self,
        payload: &Map<String, Value>,
        index: i128,
        emit: &mut S,
    ) {
        let delta = get_str(payload, "delta").filter(|d| !d.is_empty());
        if let (Some(partial_json), Some(block)) = (delta, self.is_open(Kind::Tool, index)) {
            self.streamed = true;
            emit.emit(Event::ToolArgumentsDelta {
                block,
                partial_json,
            });
        }
    }

    fn input_delta<S: Sink>(&mut self, payload: &Map<String, Value>, index: i128, emit: &mut S) {
        let delta = get_str(payload, "delta").filter(|d| !d.is_empty());
        if let (Some(delta), Some(block)) = (delta, self.is_open(Kind::Custom, index)) {
            let mut partial_json = String::new();
            if !self.streamed {
                partial_json.push_str("{\"input\":\"");
            }
            self.streamed = true;
            json_fragment(&mut partial_json, delta);
            emit.emit(Event::ToolArgumentsDelta {
                block,
                partial_json: &partial_json,
            });
        }
    }

    fn annotation<S: Sink>(&mut self, payload: &Map<String, Value>, index: i128, emit: &mut S) {
        let annotation = get_dict(payload, "annotation");
        let url = get_str(annotation, "url").filter(|u| !u.is_empty());
        let part = uint(payload, "content_index").unwrap_or(0);
        let (Some(url), Some(block), Some(open)) =
            (url, self.is_open(Kind::Text, index), self.open)
        else {
            return;
        };
        if get_str(annotation, "type") != Some("url_citation") || open.part != part {
            return;
        }
        let title = get_str(annotation, "title").unwrap_or("");
        let mut citation = Vec::new();
        citation.extend_from_slice(
            b"{\"type\":\"web_search_result_location\",\"cited_text\":\"\",\"url\":",
        );
        write_str(&mut citation, url);
        citation.extend_from_slice(b",\"title\":");
        write_str(&mut citation, title);
        citation.extend_from_slice(b",\"encrypted_index\":\"\"}");
        let citation = std::str::from_utf8(&citation).expect("JSON text");
        emit.emit(Event::CitationDelta { block, citation });
    }

    fn search_done<S: Sink>(&mut self, item: &Map<String, Value>, index: i128, emit: &mut S) {
        let search_id = get_str(item, "id").unwrap_or("");
        let block = match self.is_open(Kind::Search, index) {
            Some(block) => block,
            // A search only its done event names.
            None => self.start(
                Kind::Search,
                index,
                0,
                BlockKind::WebSearch { id: search_id },
                emit,
            ),
        };
        let action = get_dict(item, "action");
        let query = get_str(action, "query").filter(|q| !q.is_empty());
        if let (Some("search"), Some(query)) = (get_str(action, "type"), query) {
            whole_input(block, "query", query, emit);
        }
        self.close(emit);
        let urls: Vec<&str> = get_list(action, "sources")
            .iter()
            .filter_map(Value::as_object)
            .filter_map(|source| get_str(source, "url").filter(|u| !u.is_empty()))
            .collect();
        if !urls.is_empty() {
            let results = BlockKind::WebSearchResults { search_id };
            let block = self.start(Kind::Results, index, 1, results, emit);
            for url in urls {
                emit.emit(Event::SearchResult {
                    block,
                    url,
                    title: "",
                });
            }
            self.close(emit);
        }
    }

    fn item_added<S: Sink>(&mut self, item: &Map<String, Value>, index: i128, emit: &mut S) {
        match get_str(item, "type") {
            Some("web_search_call") => {
                let search = BlockKind::WebSearch {
                    id: get_str(item, "id").unwrap_or(""),
                };
                self.start(Kind::Search, index, 0, search, emit);
            }
            Some(kind @ ("function_call" | "custom_tool_call")) => {
                let call_id = match get_str(item, "call_id").filter(|c| !c.is_empty()) {
                    Some(call_id) => call_id.to_owned(),
                    None => {
                        let rest = self
                            .message_id
                            .strip_prefix("msg_")
                            .unwrap_or(&self.message_id);
                        format!("toolu_{rest}_{}", self.blocks)
                    }
                };
                let name = get_str(item, "name").unwrap_or("");
                let name = match get_str(item, "namespace").filter(|n| !n.is_empty()) {
                    Some(namespace) => flatten(namespace, name),
                    None => name.to_owned(),
                };
                self.has_call = true;
                let block_kind = if kind == "function_call" {
                    Kind::Tool
                } else {
                    Kind::Custom
                };
                let tool = BlockKind::ToolUse {
                    id: &call_id,
                    name: &name,
                };
                self.start(block_kind, index, 0, tool, emit);
            }
            Some("reasoning") => {
                self.close(emit);
                self.reasoning = Some(index);
                self.thinking.clear();
                self.summary_index = None;
            }
            _ => {}
        }
    }

    fn not_json<S: Sink>(&mut self, is_error_event: bool, text: &str, emit: &mut S) {
        if is_error_event {
            // An error event in plain text (a gateway's): its text is the message.
            let (kind, message) = upstream_failure(None, Some(text));
            self.fail(kind, &message, emit);
        } else {
            self.fail("api_error", MSG_INVALID_JSON, emit);
        }
    }

    /// The first event starts the message, with the upstream's id and model when it names
    /// its response.
    fn begin<S: Sink>(&mut self, payload: &Map<String, Value>, emit: &mut S) {
        self.started = true;
        let response = get_dict(payload, "response");
        emit.emit(Event::MessageStart {
            id: get_str(response, "id"),
            model: get_str(response, "model"),
        });
    }

    fn item_done<S: Sink>(&mut self, item: &Map<String, Value>, index: i128, emit: &mut S) {
        match get_str(item, "type") {
            Some("reasoning") if self.reasoning == Some(index) => {
                self.reasoning_done(item, index, emit);
            }
            Some("function_call") => self.function_call_done(item, index, emit),
            Some("custom_tool_call") => self.custom_call_done(item, index, emit),
            Some("web_search_call") => self.search_done(item, index, emit),
            Some("message") => self.message_done(item, index, emit),
            _ => {}
        }
    }

    /// The call's arguments, when none streamed, and its block stops.
    fn function_call_done<S: Sink>(
        &mut self,
        item: &Map<String, Value>,
        index: i128,
        emit: &mut S,
    ) {
        if let Some(block) = self.is_open(Kind::Tool, index) {
            if let Some(arguments) = get_str(item, "arguments").filter(|a| !a.is_empty()) {
                if !self.streamed {
                    emit.emit(Event::ToolArgumentsDelta {
                        block,
                        partial_json: arguments,
                    });
                }
            }
            self.close(emit);
        }
    }

    /// The streamed input's closing, or the whole input when none streamed; its block
    /// stops.
    fn custom_call_done<S: Sink>(&mut self, item: &Map<String, Value>, index: i128, emit: &mut S) {
        if let Some(block) = self.is_open(Kind::Custom, index) {
            if self.streamed {
                emit.emit(Event::ToolArgumentsDelta {
                    block,
                    partial_json: "\"}",
                });
            } else {
                whole_input(block, "input", get_str(item, "input").unwrap_or(""), emit);
            }
            self.close(emit);
        }
    }

    /// The message's text block stops; a message whose text never streamed gets its text
    /// blocks here.
    fn message_done<S: Sink>(&mut self, item: &Map<String, Value>, index: i128, emit: &mut S) {
        if self.is_open(Kind::Text, index).is_some() {
            self.close(emit);
        } else if self.texted != Some(index) {
            for part in get_list(item, "content")
                .iter()
                .filter_map(Value::as_object)
            {
                let kind = get_str(part, "type");
                let field = if kind == Some("refusal") {
                    "refusal"
                } else {
                    "text"
                };
                let text = get_str(part, field).filter(|t| !t.is_empty());
                if let (Some("output_text" | "refusal"), Some(text)) = (kind, text) {
                    let block = self.start(Kind::Text, index, 0, BlockKind::Text, emit);
                    emit.emit(Event::TextDelta { block, text });
                    self.close(emit);
                }
            }
        }
        self.texted = Some(index);
    }

    fn reasoning_done<S: Sink>(&mut self, item: &Map<String, Value>, index: i128, emit: &mut S) {
        self.reasoning = None;
        let encrypted = get_str(item, "encrypted_content").filter(|e| !e.is_empty());
        let mut text = std::mem::take(&mut self.thinking);
        let block = match self.is_open(Kind::Thinking, index) {
            Some(block) => block,
            None => {
                text = texts(get_list(item, "summary"), "summary_text").join("\n\n");
                if text.is_empty() {
                    text = texts(get_list(item, "content"), "reasoning_text").concat();
                }
                if text.is_empty() && !(encrypted.is_some() && self.key.is_some()) {
                    return;
                }
                let block = self.start(Kind::Thinking, index, 0, BlockKind::Thinking, emit);
                if !text.is_empty() {
                    emit.emit(Event::ThinkingDelta {
                        block,
                        thinking: &text,
                    });
                }
                block
            }
        };
        let signature = match (&self.key, encrypted) {
            (Some(key), Some(encrypted)) => {
                let item_id = get_str(item, "id").unwrap_or("");
                Some(sign_upstream_item(&text, item_id, encrypted, key))
            }
            (Some(key), None) if !text.is_empty() => Some(sign_thinking(&text, key)),
            _ => None,
        };
        if let Some(signature) = signature {
            emit.emit(Event::SignatureDelta {
                block,
                signature: &signature,
            });
        }
        self.close(emit);
    }

    fn end<S: Sink>(&mut self, response: &Map<String, Value>, emit: &mut S) {
        self.close(emit);
        if let Some(usage) = response.get("usage").and_then(Value::as_object) {
            let total = uint(usage, "input_tokens").unwrap_or(0);
            let details = get_dict(usage, "input_tokens_details");
            let cached = uint(details, "cached_tokens").unwrap_or(0).min(total);
            let written = uint(details, "cache_write_tokens")
                .unwrap_or(0)
                .min(total - cached);
            emit.emit(Event::Usage(Usage {
                input_tokens: Some(total - cached - written),
                cache_read_input_tokens: Some(cached),
                cache_creation_input_tokens: Some(written),
                output_tokens: Some(uint(usage, "output_tokens").unwrap_or(0)),
                reasoning_tokens: uint(
                    get_dict(usage, "output_tokens_details"),
                    "reasoning_tokens",
                ),
            }));
        }
        let reason = get_str(get_dict(response, "incomplete_details"), "reason");
        let reason = match reason {
            Some("max_output_tokens") => "max_tokens",
            Some("content_filter") => "refusal",
            _ if self.has_call => "tool_use",
            _ => "end_turn",
        };
        emit.emit(Event::StopReason { reason });
        emit.emit(Event::MessageStop);
        self.ended = true;
    }

    fn upstream_error<S: Sink>(&mut self, error: &Map<String, Value>, emit: &mut S) {
        let (kind, message) = upstream_failure(get_str(error, "code"), get_str(error, "message"));
        self.fail(kind, &message, emit);
    }

    fn fail<S: Sink>(&mut self, kind: &'static str, message: &str, emit: &mut S) {
        if !self.ended {
            emit.emit(Event::Error { kind, message });
            self.ended = true;
        }
    }
}

/// A tool input of one string field, sent whole as one arguments delta: `{"<key>":<value>}`.
fn whole_input<S: Sink>(block: u64, key: &str, value: &str, emit: &mut S) {
    let mut input = Vec::with_capacity(key.len() + value.len() + 8);
    input.extend_from_slice(b"{\"");
    input.extend_from_slice(key.as_bytes());
    input.extend_from_slice(b"\":");
    write_str(&mut input, value);
    input.push(b'}');
    let partial_json = std::str::from_utf8(&input).expect("JSON text");
    emit.emit(Event::ToolArgumentsDelta {
        block,
        partial_json,
    });
}
