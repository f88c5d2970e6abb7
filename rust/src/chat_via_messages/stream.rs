//! Anthropic Messages stream -> OpenAI Chat Completions chunks: the native transducer.
//!
//! Twin of python/hydra_proxy/chat_via_messages/stream.py, which documents the grammar;
//! the two must produce the same bytes for the same input however it is split.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::error::Category;
use serde_json::Value;

use super::event::{read_event, BlockStart, Delta, Usage};
use super::output::{self as out, ChunkWriter};
use crate::continuation::{self, Block};
use crate::errors::upstream_error;
use crate::json::trim_json_ws;
use crate::sse::SseParser;

pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

pub const MSG_INVALID_JSON: &str = "the upstream sent an event that is not valid JSON";
pub const MSG_BAD_SHAPE: &str = "the upstream sent an event of an unexpected shape";
pub const MSG_CUT_OFF: &str = "the upstream stream ended before the response was complete";
pub const MSG_UNKNOWN_BLOCK: &str =
    "the upstream sent a delta for a content block it never started";

/// Anthropic stop_reason -> Chat finish_reason.
fn finish_reason(stop_reason: Option<&str>) -> &'static str {
    match stop_reason.unwrap_or("end_turn") {
        "max_tokens" | "model_context_window_exceeded" => "length",
        "tool_use" => "tool_calls",
        "refusal" => "content_filter",
        _ => "stop",
    }
}

enum Kind {
    Text,
    Thinking { text: String, signature: String },
    Tool { index: u64, sent_arguments: bool },
    Redacted { data: String },
    Other,
}

struct State {
    writer: ChunkWriter,
    include_usage: bool,
    continuation_key: Option<Vec<u8>>,
    started: bool,
    ended: bool,
    complete: bool,
    error: Option<(&'static str, String)>,
    /// Open content blocks by upstream index.
    blocks: BTreeMap<u64, Kind>,
    tools: u64,
    /// Finished thinking / redacted blocks, for the continuation suffix.
    thinking: Vec<Block>,
    stop_reason: Option<String>,
    finish_reason: Option<&'static str>,
    input: u64,
    cache_read: u64,
    cache_creation: u64,
    output: u64,
}

pub struct ChatViaMessagesStream {
    parser: SseParser,
    state: State,
    out: Vec<u8>,
}

impl ChatViaMessagesStream {
    pub fn new(
        completion_id: &str,
        model: &str,
        created: u64,
        include_usage: bool,
        continuation_key: Option<&[u8]>,
        max_event_bytes: usize,
    ) -> Self {
        ChatViaMessagesStream {
            parser: SseParser::new(max_event_bytes),
            state: State {
                writer: ChunkWriter::new(completion_id, model, created),
                include_usage,
                continuation_key: continuation_key
                    .filter(|k| !k.is_empty())
                    .map(<[u8]>::to_vec),
                started: false,
                ended: false,
                complete: false,
                error: None,
                blocks: BTreeMap::new(),
                tools: 0,
                thinking: Vec::new(),
                stop_reason: None,
                finish_reason: None,
                input: 0,
                cache_read: 0,
                cache_creation: 0,
                output: 0,
            },
            out: Vec::new(),
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) -> &[u8] {
        self.out.clear();
        if self.state.ended {
            return &self.out;
        }
        let (state, out) = (&mut self.state, &mut self.out);
        self.parser
            .feed(chunk, |event, data| state.event(event, data, out));
        if !state.ended {
            if let Some(error) = self.parser.error() {
                state.fail("api_error", error.to_owned(), out);
            }
        }
        &self.out
    }

    pub fn finish(&mut self) -> &[u8] {
        self.out.clear();
        if self.state.ended {
            return &self.out;
        }
        let (state, out) = (&mut self.state, &mut self.out);
        self.parser
            .finish(|event, data| state.event(event, data, out));
        if !state.ended {
            if let Some(error) = self.parser.error() {
                state.fail("api_error", error.to_owned(), out);
            } else if state.stop_reason.is_some() {
                state.end(out); // message_delta said how it ended; message_stop went missing
            } else {
                state.fail("api_error", MSG_CUT_OFF.to_owned(), out);
            }
        }
        &self.out
    }

    pub fn ping(&mut self) -> &[u8] {
        self.out.clear();
        if !self.state.ended {
            self.out.extend_from_slice(out::PING);
        }
        &self.out
    }

    pub fn fail(&mut self, error_type: &'static str, message: &str) -> &[u8] {
        self.out.clear();
        if !self.state.ended {
            self.state
                .fail(error_type, message.to_owned(), &mut self.out);
        }
        &self.out
    }

    pub fn finished(&self) -> bool {
        self.state.ended
    }

    pub fn complete(&self) -> bool {
        self.state.complete
    }

    pub fn error(&self) -> Option<(&'static str, &str)> {
        self.state.error.as_ref().map(|(t, m)| (*t, m.as_str()))
    }

    /// A role chunk (and so a response) has been emitted.
    pub fn has_content(&self) -> bool {
        self.state.started
    }

    /// The Chat finish_reason, once the stream has ended cleanly.
    pub fn stop_reason(&self) -> Option<&'static str> {
        self.state.finish_reason
    }

    /// (prompt_tokens, cached_tokens, completion_tokens), as OpenAI counts them.
    pub fn usage(&self) -> (u128, u64, u64) {
        (
            self.state.prompt_tokens(),
            self.state.cache_read,
            self.state.output,
        )
    }
}

impl State {
    fn prompt_tokens(&self) -> u128 {
        u128::from(self.input) + u128::from(self.cache_read) + u128::from(self.cache_creation)
    }

    fn event(&mut self, event: Option<&[u8]>, data: &[u8], out: &mut Vec<u8>) {
        if self.ended {
            return;
        }
        let is_error_event = event == Some(b"error");
        if trim_json_ws(data).is_empty() {
            if is_error_event {
                let (kind, message) = upstream_error(&Value::Null);
                self.fail(kind, message, out);
            }
            return;
        }
        let text = match std::str::from_utf8(data) {
            Ok(text) => Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(data),
        };
        let parsed = match read_event(&text) {
            Ok(parsed) => parsed,
            Err(err) => {
                // The typed reader may stop at a wrong type before a later syntax error, so
                // the text is parsed again to tell the two apart.
                match serde_json::from_str::<Value>(&text) {
                    Err(_) if is_error_event => {
                        let (kind, message) = upstream_error(&Value::String(text.into_owned()));
                        self.fail(kind, message, out);
                    }
                    Err(_) => self.fail("api_error", MSG_INVALID_JSON.to_owned(), out),
                    Ok(value)
                        if is_error_event || value.get("error").is_some_and(|e| !e.is_null()) =>
                    {
                        let (kind, message) = upstream_error(&value);
                        self.fail(kind, message, out);
                    }
                    Ok(_) => {
                        debug_assert_eq!(err.classify(), Category::Data);
                        self.fail("api_error", MSG_BAD_SHAPE.to_owned(), out);
                    }
                }
                return;
            }
        };
        let kind: Option<Cow<'_, str>> = match parsed.kind {
            Some(kind) => Some(kind),
            None => event.map(String::from_utf8_lossy),
        };
        if kind.as_deref() == Some("error") || is_error_event || parsed.has_error {
            let value = serde_json::from_str::<Value>(&text).unwrap_or(Value::Null);
            let (kind, message) = upstream_error(&value);
            self.fail(kind, message, out);
            return;
        }
        if let Some(usage) = parsed.usage {
            self.usage(usage);
        }
        match kind.as_deref() {
            Some("message_start") => self.start(out),
            Some("content_block_start") => self.block_start(parsed.index, parsed.block, out),
            Some("content_block_delta") => self.block_delta(parsed.index, parsed.delta, out),
            Some("content_block_stop") => self.block_stop(parsed.index, out),
            Some("message_delta") => {
                if let Some(stop_reason) = parsed.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(stop_reason.into_owned());
                }
            }
            Some("message_stop") => self.end(out),
            Some("ping") => out.extend_from_slice(out::PING),
            _ => {} // other (future) event types are ignored, as the Anthropic docs ask
        }
    }

    fn usage(&mut self, usage: Usage) {
        // Anthropic counts are cumulative; a later event repeats or updates them.
        if let Some(v) = usage.input_tokens {
            self.input = v;
        }
        if let Some(v) = usage.cache_read_input_tokens {
            self.cache_read = v;
        }
        if let Some(v) = usage.cache_creation_input_tokens {
            self.cache_creation = v;
        }
        if let Some(v) = usage.output_tokens {
            self.output = v;
        }
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.started = true;
            self.writer.role(out);
        }
    }

    fn block_start(
        &mut self,
        index: Option<u64>,
        block: Option<BlockStart<'_>>,
        out: &mut Vec<u8>,
    ) {
        self.start(out);
        let block = block.unwrap_or_default();
        let kind = match block.kind.as_deref() {
            Some("text") => {
                if let Some(text) = block.text.as_deref().filter(|t| !t.is_empty()) {
                    self.writer.content(out, text);
                }
                Kind::Text
            }
            Some("thinking") => {
                let text = block.thinking.map(Cow::into_owned).unwrap_or_default();
                if !text.is_empty() {
                    self.writer.reasoning(out, &text);
                }
                Kind::Thinking {
                    text,
                    signature: String::new(),
                }
            }
            Some("redacted_thinking") => Kind::Redacted {
                data: block.data.map(Cow::into_owned).unwrap_or_default(),
            },
            Some("tool_use") => {
                let index = self.tools;
                self.tools += 1;
                let id = block.id.as_deref().unwrap_or("");
                self.writer
                    .tool_start(out, index, id, block.name.as_deref().unwrap_or(""));
                Kind::Tool {
                    index,
                    sent_arguments: false,
                }
            }
            _ => Kind::Other, // server tools and their results: run by Anthropic
        };
        self.blocks.insert(index.unwrap_or(0), kind);
    }

    fn block_delta(&mut self, index: Option<u64>, delta: Option<Delta<'_>>, out: &mut Vec<u8>) {
        let Some(block) = self.blocks.get_mut(&index.unwrap_or(0)) else {
            self.fail("api_error", MSG_UNKNOWN_BLOCK.to_owned(), out);
            return;
        };
        let Some(delta) = delta else {
            return;
        };
        match (delta.kind.as_deref(), block) {
            (Some("text_delta"), Kind::Text) => {
                if let Some(text) = delta.text.as_deref().filter(|t| !t.is_empty()) {
                    self.writer.content(out, text);
                }
            }
            (Some("thinking_delta"), Kind::Thinking { text, .. }) => {
                if let Some(thinking) = delta.thinking.as_deref().filter(|t| !t.is_empty()) {
                    text.push_str(thinking);
                    self.writer.reasoning(out, thinking);
                }
            }
            (Some("signature_delta"), Kind::Thinking { signature, .. }) => {
                *signature = delta.signature.map(Cow::into_owned).unwrap_or_default();
            }
            (
                Some("input_json_delta"),
                Kind::Tool {
                    index,
                    sent_arguments,
                },
            ) => {
                if let Some(partial) = delta.partial_json.as_deref().filter(|p| !p.is_empty()) {
                    *sent_arguments = true;
                    self.writer.tool_arguments(out, *index, partial);
                }
            }
            _ => {} // citations and deltas of server-tool blocks have no Chat form
        }
    }

    fn block_stop(&mut self, index: Option<u64>, out: &mut Vec<u8>) {
        match self.blocks.remove(&index.unwrap_or(0)) {
            Some(kind) => self.close(kind, out),
            None => self.fail("api_error", MSG_UNKNOWN_BLOCK.to_owned(), out),
        }
    }

    fn close(&mut self, kind: Kind, out: &mut Vec<u8>) {
        match kind {
            Kind::Tool {
                index,
                sent_arguments: false,
            } => {
                self.writer.tool_arguments(out, index, "{}"); // a tool without arguments
            }
            Kind::Thinking { text, signature } => {
                self.thinking.push(Block::Thinking { text, signature })
            }
            Kind::Redacted { data } => self.thinking.push(Block::Redacted { data }),
            _ => {}
        }
    }

    fn end(&mut self, out: &mut Vec<u8>) {
        self.start(out);
        for (_, kind) in std::mem::take(&mut self.blocks) {
            self.close(kind, out); // blocks a lenient upstream never stopped
        }
        if let Some(key) = &self.continuation_key {
            if !self.thinking.is_empty() {
                let suffix = continuation::encode(&self.thinking, key);
                self.writer.reasoning(out, &suffix);
            }
        }
        let reason = finish_reason(self.stop_reason.as_deref());
        self.finish_reason = Some(reason);
        self.writer.finish(out, reason);
        if self.include_usage {
            self.writer
                .usage(out, self.prompt_tokens(), self.output, self.cache_read);
        }
        out.extend_from_slice(out::DONE);
        self.ended = true;
        self.complete = true;
    }

    fn fail(&mut self, error_type: &'static str, message: String, out: &mut Vec<u8>) {
        out::error(out, error_type, &message);
        self.error = Some((error_type, message));
        self.ended = true;
    }
}
