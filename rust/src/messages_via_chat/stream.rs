//! OpenAI Chat Completions stream -> Anthropic Messages SSE: the native transducer.
//!
//! Twin of python/hydra_proxy/messages_via_chat/stream.py, which documents the grammar;
//! the two must produce the same bytes for the same input however it is split.

use serde_json::Value;

use super::chunk::{Chunk, ChunkReader, Delta, ReadError, ToolCallDelta};
use super::mapping;
use super::output as out;
use crate::errors::{upstream_error, MSG_UPSTREAM_DEFAULT};
use crate::json::trim_json_ws;
use crate::signature::sign_thinking;
use crate::sse::SseParser;

pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

pub const MSG_INVALID_JSON: &str = "the upstream sent an event that is not valid JSON";
pub const MSG_BAD_SHAPE: &str = "the upstream sent an event of an unexpected shape";
pub const MSG_CUT_OFF: &str = "the upstream stream ended before the response was complete";
pub const MSG_INTERLEAVED: &str = "the upstream interleaved the arguments of parallel tool calls";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Text,
    Thinking,
    Tool(usize),
}

struct ToolCall {
    upstream_index: Option<u64>,
    id: String,
}

/// Everything but the parser, so the parser's event callback can borrow it mutably.
struct State {
    message_id: String,
    estimate: u64,
    signing_key: Option<Vec<u8>>,
    started: bool,
    ended: bool,
    complete: bool,
    error: Option<(&'static str, String)>,
    /// The next content block index, and what the open block is (one is open at a time).
    blocks: u64,
    open: Open,
    thinking: String,
    tools: Vec<(ToolCall, u64)>,
    finish_reason: Option<String>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    cached_tokens: Option<u64>,
    stop_reason: Option<&'static str>,
    model: String,
    /// Reads the chunks, skipping what they repeat of the previous ones.
    reader: ChunkReader,
}

pub struct MessagesViaChatStream {
    parser: SseParser,
    state: State,
    out: Vec<u8>,
}

impl MessagesViaChatStream {
    pub fn new(
        message_id: &str,
        model: &str,
        input_tokens: u64,
        signing_key: Option<&[u8]>,
        max_event_bytes: usize,
    ) -> Self {
        MessagesViaChatStream {
            parser: SseParser::new(max_event_bytes),
            state: State {
                message_id: message_id.to_owned(),
                model: model.to_owned(),
                estimate: input_tokens,
                signing_key: signing_key.filter(|k| !k.is_empty()).map(<[u8]>::to_vec),
                started: false,
                ended: false,
                complete: false,
                error: None,
                blocks: 0,
                open: Open::None,
                thinking: String::new(),
                tools: Vec::new(),
                finish_reason: None,
                prompt_tokens: None,
                completion_tokens: None,
                cached_tokens: None,
                stop_reason: None,
                reader: ChunkReader::default(),
            },
            out: Vec::new(),
        }
    }

    /// Translate any slice of the upstream body; returns the complete events it produced.
    pub fn feed(&mut self, chunk: &[u8]) -> &[u8] {
        self.out.clear();
        if self.state.ended {
            return &self.out;
        }
        let (state, out) = (&mut self.state, &mut self.out);
        state.ensure_started(out);
        self.parser
            .feed(chunk, |event, data| state.event(event, data, out));
        if !state.ended {
            if let Some(error) = self.parser.error() {
                state.fail("api_error", error.to_owned(), out);
            }
        }
        &self.out
    }

    /// Upstream EOF: the closing events, or an error event if the stream was cut short.
    pub fn finish(&mut self) -> &[u8] {
        self.out.clear();
        if self.state.ended {
            return &self.out;
        }
        let (state, out) = (&mut self.state, &mut self.out);
        state.ensure_started(out);
        self.parser
            .finish(|event, data| state.event(event, data, out));
        if !state.ended {
            if let Some(error) = self.parser.error() {
                state.fail("api_error", error.to_owned(), out);
            } else if state.finish_reason.is_some() {
                state.end(out);
            } else {
                state.fail("api_error", MSG_CUT_OFF.to_owned(), out);
            }
        }
        &self.out
    }

    /// A keepalive for a silent upstream (nothing once the stream has ended).
    pub fn ping(&mut self) -> &[u8] {
        self.out.clear();
        if !self.state.ended {
            self.state.ensure_started(&mut self.out);
            self.out.extend_from_slice(out::PING);
        }
        &self.out
    }

    /// End the stream with an error event (e.g. the upstream connection broke).
    pub fn fail(&mut self, error_type: &'static str, message: &str) -> &[u8] {
        self.out.clear();
        if !self.state.ended {
            self.state.ensure_started(&mut self.out);
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

    pub fn has_content(&self) -> bool {
        self.state.blocks > 0
    }

    pub fn stop_reason(&self) -> Option<&'static str> {
        self.state.stop_reason
    }

    /// (input_tokens, cache_read_input_tokens, output_tokens), as Anthropic counts them.
    pub fn usage(&self) -> (u64, u64, u64) {
        self.state.usage()
    }
}

impl State {
    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.started = true;
            out::message_start(out, &self.message_id, &self.model, self.estimate);
        }
    }

    fn usage(&self) -> (u64, u64, u64) {
        let cached = self.cached_tokens.unwrap_or(0);
        let input = match self.prompt_tokens {
            None => self.estimate,
            Some(prompt) => mapping::input_tokens(prompt, cached),
        };
        (input, cached, self.completion_tokens.unwrap_or(0))
    }

    // -- upstream events ---------------------------------------------------------------

    fn event(&mut self, event: Option<&[u8]>, data: &[u8], out: &mut Vec<u8>) {
        if self.ended {
            return; // the rest of a chunk after the end is not translated
        }
        // Valid UTF-8 is the rule; the lossy decoder is only for the exception (it is
        // several times slower than validation on the hot path).
        let text = match std::str::from_utf8(data) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(data),
        };
        if event == Some(b"error") {
            let payload = match serde_json::from_str::<Value>(&text) {
                Ok(value) => value,
                Err(_) if trim_json_ws(data).is_empty() => Value::Null,
                Err(_) => Value::String(text.into_owned()),
            };
            let (kind, message) = upstream_error(&payload);
            self.fail(kind, message, out);
            return;
        }
        let stripped = trim_json_ws(data);
        if stripped.is_empty() {
            return;
        }
        if stripped == b"[DONE]" {
            self.end(out);
            return;
        }
        let mut chunk = Chunk::default();
        match self.reader.read(&text, &mut chunk) {
            Ok(()) => {
                if chunk.has_error {
                    self.fail_upstream(&text, out);
                    return;
                }
                if let Some(usage) = chunk.usage {
                    if usage.prompt_tokens.is_some() {
                        self.prompt_tokens = usage.prompt_tokens;
                    }
                    if usage.completion_tokens.is_some() {
                        self.completion_tokens = usage.completion_tokens;
                    }
                    if usage.cached_tokens.is_some() {
                        self.cached_tokens = usage.cached_tokens;
                    }
                }
                for choice in chunk.choices.iter() {
                    if let Some(delta) = &choice.delta {
                        self.delta(delta, out);
                        if self.ended {
                            return;
                        }
                    }
                    if let Some(finish_reason) = &choice.finish_reason {
                        self.finish_reason = Some(finish_reason.to_string());
                        self.close(out);
                    }
                }
            }
            // An error payload is reported as such even when the rest of the chunk is odd.
            Err(ReadError::BadShape { has_error: true }) => self.fail_upstream(&text, out),
            Err(ReadError::BadShape { has_error: false }) => {
                self.fail("api_error", MSG_BAD_SHAPE.to_owned(), out)
            }
            Err(ReadError::InvalidJson) => self.fail("api_error", MSG_INVALID_JSON.to_owned(), out),
        }
    }

    fn fail_upstream(&mut self, text: &str, out: &mut Vec<u8>) {
        // (The chunk reader validated the text; serde_json only fails on nesting deeper
        // than its 128 levels, where orjson allows 1024.)
        let (kind, message) = match serde_json::from_str::<Value>(text) {
            Ok(value) => upstream_error(&value),
            Err(_) => ("api_error", MSG_UPSTREAM_DEFAULT.to_owned()),
        };
        self.fail(kind, message, out);
    }

    fn delta(&mut self, delta: &Delta<'_>, out: &mut Vec<u8>) {
        if let Some(reasoning) = delta.reasoning().filter(|s| !s.is_empty()) {
            if self.open != Open::Thinking {
                self.close(out);
                self.open_block(Open::Thinking, out);
            }
            if self.signing_key.is_some() {
                self.thinking.push_str(reasoning);
            }
            out::thinking_delta(out, self.blocks - 1, reasoning);
        }
        for text in [delta.content.as_deref(), delta.refusal.as_deref()] {
            if let Some(text) = text.filter(|s| !s.is_empty()) {
                if self.open != Open::Text {
                    self.close(out);
                    self.open_block(Open::Text, out);
                }
                out::text_delta(out, self.blocks - 1, text);
            }
        }
        for call in delta.tool_calls.iter() {
            self.tool_call(call, out);
            if self.ended {
                return;
            }
        }
    }

    fn tool_call(&mut self, call: &ToolCallDelta<'_>, out: &mut Vec<u8>) {
        let position = match self.find_tool(call.index, call.id.as_deref()) {
            Some(position) => position,
            None => {
                self.close(out);
                let id = match call.id.as_deref() {
                    Some(id) if !id.is_empty() => id.to_owned(),
                    _ => format!("toolu_{}_{}", self.message_id, self.tools.len()),
                };
                let block = self.blocks;
                out::tool_use_start(out, block, &id, call.name.as_deref().unwrap_or(""));
                self.tools.push((
                    ToolCall {
                        upstream_index: call.index,
                        id,
                    },
                    block,
                ));
                self.blocks += 1;
                self.open = Open::Tool(self.tools.len() - 1);
                self.tools.len() - 1
            }
        };
        if let Some(arguments) = call.arguments.as_deref().filter(|s| !s.is_empty()) {
            if self.open != Open::Tool(position) {
                self.fail("api_error", MSG_INTERLEAVED.to_owned(), out);
                return;
            }
            out::input_json_delta(out, self.tools[position].1, arguments);
        }
    }

    /// Chat tool calls are keyed by `index`; Mistral-style calls without one by `id`; a
    /// fragment with neither continues the latest call.
    fn find_tool(&self, index: Option<u64>, id: Option<&str>) -> Option<usize> {
        match (index, id) {
            (Some(index), _) => self
                .tools
                .iter()
                .position(|(t, _)| t.upstream_index == Some(index)),
            (None, Some(id)) if !id.is_empty() => self.tools.iter().position(|(t, _)| t.id == id),
            _ => self.tools.len().checked_sub(1),
        }
    }

    // -- output ------------------------------------------------------------------------

    fn open_block(&mut self, kind: Open, out: &mut Vec<u8>) {
        let index = self.blocks;
        self.blocks += 1;
        self.open = kind;
        if kind == Open::Text {
            out::text_start(out, index);
        } else {
            out::thinking_start(out, index);
        }
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        if self.open == Open::None {
            return;
        }
        let index = self.blocks - 1;
        if self.open == Open::Thinking {
            if let Some(key) = &self.signing_key {
                out::signature_delta(out, index, &sign_thinking(&self.thinking, key));
            }
            self.thinking.clear();
        }
        out::block_stop(out, index);
        self.open = Open::None;
    }

    fn end(&mut self, out: &mut Vec<u8>) {
        self.close(out);
        let stop_reason =
            mapping::stop_reason(self.finish_reason.as_deref(), !self.tools.is_empty());
        self.stop_reason = Some(stop_reason);
        let (input, cached, output) = self.usage();
        out::message_delta(out, stop_reason, input, cached, output);
        out.extend_from_slice(out::MESSAGE_STOP);
        self.ended = true;
        self.complete = true;
    }

    fn fail(&mut self, error_type: &'static str, message: String, out: &mut Vec<u8>) {
        out::error(out, error_type, &message);
        self.error = Some((error_type, message));
        self.ended = true;
    }
}
