//! Anthropic Messages stream -> canonical events (twin of
//! python/hydra_proxy/anthropic/decoder.py, which documents the grammar).
//!
//! The canonical model is Anthropic's, so this is mostly reading: events are checked whole
//! before any of it is acted on, deltas are matched to the block they name (a delta for a
//! block never started is an error, one of a kind the block cannot hold is skipped, as are
//! event types this proxy does not know, as the Anthropic docs ask), and blocks a lenient
//! upstream never stopped are stopped at message_stop.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::error::Category;
use serde_json::Value;

use super::chunk::{read_chunk, BlockStart, Delta, ReadError, SearchResult};
use crate::errors::upstream_error;
use crate::json::{self, trim_json_ws};
use crate::stream::messages::{MSG_BAD_SHAPE, MSG_CUT_OFF, MSG_INVALID_JSON};
use crate::stream::{BlockKind, Decoder, Event, Sink};

pub const MSG_UNKNOWN_BLOCK: &str =
    "the upstream sent a delta for a content block it never started";

/// What an open block is, for matching its deltas.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
    Tool,
    Redacted,
    ServerTool,
}

#[derive(Default)]
pub struct AnthropicDecoder {
    ended: bool,
    /// Open content blocks by upstream index.
    blocks: BTreeMap<u64, Open>,
    /// message_delta said how the message ended.
    has_stop_reason: bool,
}

impl AnthropicDecoder {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Decoder for AnthropicDecoder {
    fn event<S: Sink>(&mut self, event: Option<&[u8]>, data: &[u8], emit: &mut S) {
        if self.ended {
            return;
        }
        let is_error_event = event == Some(b"error");
        if trim_json_ws(data).is_empty() {
            if is_error_event {
                let (kind, message) = upstream_error(&Value::Null);
                self.fail(kind, &message, emit);
            }
            return;
        }
        let text = json::text(data);
        let last_wins: Option<String>;
        let mut slot = None;
        let mut retry = None;
        let parsed = match read_chunk(&text, &mut slot) {
            Ok(parsed) => parsed,
            // A key repeated after a wrong-typed value: read as Python reads it (rare).
            Err(ReadError::Shape(_))
                if {
                    last_wins = crate::json::last_key_wins(&text);
                    last_wins.is_some()
                } && read_chunk(last_wins.as_deref().unwrap_or(""), &mut retry).is_ok() =>
            {
                retry.as_ref().unwrap()
            }
            Err(err) => {
                self.unreadable(is_error_event, err, text, emit);
                return;
            }
        };
        let event_name: Option<Cow<'_, str>>;
        let kind = match parsed.kind.as_deref() {
            Some(kind) => Some(kind),
            None => {
                event_name = event.map(String::from_utf8_lossy);
                event_name.as_deref()
            }
        };
        if kind == Some("error") || is_error_event || parsed.has_error {
            let value = serde_json::from_str::<Value>(&text).unwrap_or(Value::Null);
            let (kind, message) = upstream_error(&value);
            self.fail(kind, &message, emit);
            return;
        }
        if let Some(usage) = parsed.usage() {
            emit.emit(Event::Usage(usage));
        }
        match kind {
            Some("message_start") => emit.emit(Event::MessageStart {
                id: parsed.message_id(),
                model: parsed.message_model(),
            }),
            Some("content_block_start") => {
                self.block_start(parsed.index, parsed.block.as_ref(), emit);
            }
            Some("content_block_delta") => {
                self.block_delta(parsed.index, parsed.delta.as_ref(), emit);
            }
            Some("content_block_stop") => self.block_stop(parsed.index, emit),
            Some("message_delta") => self.message_delta(parsed.delta.as_ref(), emit),
            Some("message_stop") => self.end(emit),
            Some("ping") => emit.emit(Event::Ping),
            _ => {} // other (future) event types are ignored, as the Anthropic docs ask
        }
    }

    fn finish<S: Sink>(&mut self, emit: &mut S) {
        if self.has_stop_reason {
            self.end(emit); // message_delta said how it ended; message_stop went missing
        } else {
            self.fail("api_error", MSG_CUT_OFF, emit);
        }
    }
}

impl AnthropicDecoder {
    fn message_delta<S: Sink>(&mut self, delta: Option<&Delta<'_>>, emit: &mut S) {
        if let Some(reason) = delta.and_then(|d| d.stop_reason.as_deref()) {
            self.has_stop_reason = true;
            emit.emit(Event::StopReason { reason });
        }
    }

    fn block_start<S: Sink>(
        &mut self,
        index: Option<u64>,
        block: Option<&BlockStart<'_>>,
        emit: &mut S,
    ) {
        let empty;
        let block = match block {
            Some(block) => block,
            None => {
                empty = BlockStart::default();
                &empty
            }
        };
        let id = index.unwrap_or(0);
        // A field the upstream leaves out reads as empty.
        let tool_id = block.id.as_deref().unwrap_or("");
        let name = block.name.as_deref().unwrap_or("");
        let (open, kind) = match block.kind.as_deref() {
            Some("text") => (Open::Text, BlockKind::Text),
            Some("thinking") => (Open::Thinking, BlockKind::Thinking),
            Some("redacted_thinking") => {
                let data = block.data.as_deref().unwrap_or("");
                (Open::Redacted, BlockKind::RedactedThinking { data })
            }
            Some("tool_use") => (Open::Tool, BlockKind::ToolUse { id: tool_id, name }),
            Some("server_tool_use") if name == "web_search" => {
                (Open::ServerTool, BlockKind::WebSearch { id: tool_id })
            }
            Some("web_search_tool_result") => {
                let search_id = block.tool_use_id.as_deref().unwrap_or("");
                (Open::ServerTool, BlockKind::WebSearchResults { search_id })
            }
            // Other server tools and their results: run by Anthropic.
            other => (
                Open::ServerTool,
                BlockKind::ServerTool {
                    kind: other.unwrap_or(""),
                },
            ),
        };
        emit.emit(Event::BlockStart { block: id, kind });
        if let BlockKind::WebSearchResults { .. } = kind {
            search_results(id, &block.content, emit);
        }
        // A block may start with content; it is the first delta.
        match open {
            Open::Text => {
                if let Some(text) = block.text.as_deref().filter(|t| !t.is_empty()) {
                    emit.emit(Event::TextDelta { block: id, text });
                }
            }
            Open::Thinking => {
                if let Some(thinking) = block.thinking.as_deref().filter(|t| !t.is_empty()) {
                    emit.emit(Event::ThinkingDelta {
                        block: id,
                        thinking,
                    });
                }
            }
            _ => {}
        }
        self.blocks.insert(id, open);
    }

    fn block_delta<S: Sink>(
        &mut self,
        index: Option<u64>,
        delta: Option<&Delta<'_>>,
        emit: &mut S,
    ) {
        let block = index.unwrap_or(0);
        let Some(&open) = self.blocks.get(&block) else {
            self.fail("api_error", MSG_UNKNOWN_BLOCK, emit);
            return;
        };
        let Some(delta) = delta else {
            return;
        };
        match (delta.kind.as_deref(), open) {
            (Some("text_delta"), Open::Text) => {
                if let Some(text) = delta.text.as_deref().filter(|t| !t.is_empty()) {
                    emit.emit(Event::TextDelta { block, text });
                }
            }
            (Some("thinking_delta"), Open::Thinking) => {
                if let Some(thinking) = delta.thinking.as_deref().filter(|t| !t.is_empty()) {
                    emit.emit(Event::ThinkingDelta { block, thinking });
                }
            }
            (Some("signature_delta"), Open::Thinking) => {
                let signature = delta.signature.as_deref().unwrap_or("");
                emit.emit(Event::SignatureDelta { block, signature });
            }
            (Some("input_json_delta"), Open::Tool | Open::ServerTool) => {
                if let Some(partial_json) = delta.partial_json.as_deref().filter(|p| !p.is_empty())
                {
                    emit.emit(Event::ToolArgumentsDelta {
                        block,
                        partial_json,
                    });
                }
            }
            (Some("citations_delta"), Open::Text) => {
                if let Some(citation) = delta.citation {
                    let citation = citation.get();
                    emit.emit(Event::CitationDelta { block, citation });
                }
            }
            _ => {} // a delta of a kind the block cannot hold
        }
    }

    fn block_stop<S: Sink>(&mut self, index: Option<u64>, emit: &mut S) {
        let block = index.unwrap_or(0);
        if self.blocks.remove(&block).is_some() {
            emit.emit(Event::BlockStop { block });
        } else {
            self.fail("api_error", MSG_UNKNOWN_BLOCK, emit);
        }
    }

    /// An event that cannot be read (not JSON, or of a shape it cannot have): the
    /// upstream's error when it says it is one, else a malformed stream.
    fn unreadable<S: Sink>(
        &mut self,
        is_error_event: bool,
        err: ReadError,
        text: Cow<'_, str>,
        emit: &mut S,
    ) {
        // A shape error may come before a later error key, so the (valid) text is read
        // again as a tree to look for one.
        let value = match err {
            ReadError::Syntax => None,
            ReadError::Shape(err) => {
                debug_assert_eq!(err.classify(), Category::Data);
                crate::json::parse(&text)
            }
        };
        match value {
            None if is_error_event => {
                let (kind, message) = upstream_error(&Value::String(text.into_owned()));
                self.fail(kind, &message, emit);
            }
            None => self.fail("api_error", MSG_INVALID_JSON, emit),
            Some(value) if is_error_event || value.get("error").is_some_and(|e| !e.is_null()) => {
                let (kind, message) = upstream_error(&value);
                self.fail(kind, &message, emit);
            }
            Some(_) => self.fail("api_error", MSG_BAD_SHAPE, emit),
        }
    }

    fn end<S: Sink>(&mut self, emit: &mut S) {
        for (block, _) in std::mem::take(&mut self.blocks) {
            emit.emit(Event::BlockStop { block }); // blocks a lenient upstream never stopped
        }
        emit.emit(Event::MessageStop);
        self.ended = true;
    }

    fn fail<S: Sink>(&mut self, kind: &'static str, message: &str, emit: &mut S) {
        emit.emit(Event::Error { kind, message });
        self.ended = true;
    }
}

/// The results of a web_search_tool_result's content (an error is an object: no results).
fn search_results<S: Sink>(block: u64, content: &[SearchResult<'_>], emit: &mut S) {
    for result in content {
        if result.kind.as_deref() != Some("web_search_result") {
            continue;
        }
        if let Some(url) = result.url.as_deref().filter(|u| !u.is_empty()) {
            let title = result.title.as_deref().unwrap_or("");
            emit.emit(Event::SearchResult { block, url, title });
        }
    }
}
