//! OpenAI Chat Completions stream -> canonical events (twin of
//! python/hydra_proxy/chat/decoder.py, which documents the grammar).
//!
//! Chat has no content blocks: the decoder makes them, one open at a time: reasoning ->
//! a thinking block, content and refusal -> a text block, each tool call -> a tool block.
//! Its quirks live here: tool calls keyed by `index` (or `id`, or neither), usage that
//! counts cached tokens as prompt tokens, and the proxy's `hydra1.` signature on thinking
//! (Chat upstreams send none; Claude Code needs one to replay the thinking).

use serde_json::Value;

use super::chunk::{Chunk, ChunkReader, Delta, ReadError, ToolCallDelta};
use super::mapping;
use crate::errors::{upstream_error, MSG_UPSTREAM_DEFAULT};
use crate::json::{self, trim_json_ws};
use crate::signature::sign_thinking;
use crate::stream::messages::{MSG_BAD_SHAPE, MSG_CUT_OFF, MSG_INVALID_JSON};
use crate::stream::{start_once, BlockKind, Decoder, Event, Sink, Usage};

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
    block: u64,
}

pub struct ChatDecoder {
    /// Names the tool calls an upstream sent without an id.
    message_id: String,
    signing_key: Option<Vec<u8>>,
    started: bool,
    ended: bool,
    /// The next block id, and what the open block is.
    blocks: u64,
    open: Open,
    /// The open thinking block's text, to sign when it closes.
    thinking: String,
    tools: Vec<ToolCall>,
    finish_reason: Option<String>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    cached_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
    /// Reads the chunks, skipping what they repeat of the previous ones.
    reader: ChunkReader,
}

impl ChatDecoder {
    pub fn new(message_id: &str, signing_key: Option<&[u8]>) -> Self {
        ChatDecoder {
            message_id: message_id.to_owned(),
            signing_key: signing_key.filter(|k| !k.is_empty()).map(<[u8]>::to_vec),
            started: false,
            ended: false,
            blocks: 0,
            open: Open::None,
            thinking: String::new(),
            tools: Vec::new(),
            finish_reason: None,
            prompt_tokens: None,
            completion_tokens: None,
            cached_tokens: None,
            reasoning_tokens: None,
            reader: ChunkReader::default(),
        }
    }
}

impl Decoder for ChatDecoder {
    fn begin<S: Sink>(&mut self, emit: &mut S) {
        start_once(&mut self.started, emit);
    }

    fn event<S: Sink>(&mut self, event: Option<&[u8]>, data: &[u8], emit: &mut S) {
        if self.ended {
            return; // the rest of a chunk after the end is not translated
        }
        let text = json::text(data);
        if event == Some(b"error") {
            // Read as orjson reads it (the Python twin): its validity rules and depth.
            let payload = match crate::json::parse(&text) {
                Some(value) => value,
                None if trim_json_ws(data).is_empty() => Value::Null,
                None => Value::String(text.into_owned()),
            };
            let (kind, message) = upstream_error(&payload);
            self.fail(kind, &message, emit);
            return;
        }
        let stripped = trim_json_ws(data);
        if stripped.is_empty() {
            return;
        }
        if stripped == b"[DONE]" {
            self.end(emit);
            return;
        }
        let mut chunk = Chunk::default();
        match self.reader.read(&text, &mut chunk) {
            Ok(()) => self.chunk(&text, &chunk, emit),
            // An error payload is reported as such even when the rest of the chunk is odd.
            Err(ReadError::BadShape { has_error: true }) => self.fail_upstream(&text, emit),
            Err(ReadError::BadShape { has_error: false }) => {
                self.fail("api_error", MSG_BAD_SHAPE, emit);
            }
            Err(ReadError::InvalidJson) => self.fail("api_error", MSG_INVALID_JSON, emit),
        }
    }

    fn finish<S: Sink>(&mut self, emit: &mut S) {
        if self.finish_reason.is_some() {
            self.end(emit);
        } else {
            self.fail("api_error", MSG_CUT_OFF, emit);
        }
    }
}

impl ChatDecoder {
    fn chunk<S: Sink>(&mut self, text: &str, chunk: &Chunk<'_>, emit: &mut S) {
        if chunk.has_error {
            self.fail_upstream(text, emit);
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
            if usage.reasoning_tokens.is_some() {
                self.reasoning_tokens = usage.reasoning_tokens;
            }
            emit.emit(Event::Usage(self.usage()));
        }
        for choice in chunk.choices.iter() {
            if let Some(delta) = &choice.delta {
                self.delta(delta, emit);
                if self.ended {
                    return;
                }
            }
            if let Some(finish_reason) = &choice.finish_reason {
                self.finish_reason = Some(finish_reason.to_string());
                self.close(emit);
            }
        }
    }

    /// The counts so far, as Anthropic counts them.
    fn usage(&self) -> Usage {
        let cached = self.cached_tokens;
        Usage {
            input_tokens: self
                .prompt_tokens
                .map(|prompt| mapping::input_tokens(prompt, cached.unwrap_or(0))),
            cache_read_input_tokens: cached,
            cache_creation_input_tokens: None,
            output_tokens: self.completion_tokens,
            reasoning_tokens: self.reasoning_tokens,
        }
    }

    fn fail_upstream<S: Sink>(&mut self, text: &str, emit: &mut S) {
        // The chunk reader validated the text; read it as orjson does (no 128-level limit).
        let (kind, message) = match crate::json::parse(text) {
            Some(value) => upstream_error(&value),
            None => ("api_error", MSG_UPSTREAM_DEFAULT.to_owned()),
        };
        self.fail(kind, &message, emit);
    }

    fn delta<S: Sink>(&mut self, delta: &Delta<'_>, emit: &mut S) {
        if let Some(reasoning) = delta.reasoning().filter(|s| !s.is_empty()) {
            if self.open != Open::Thinking {
                self.close(emit);
                self.open_block(Open::Thinking, emit);
            }
            if self.signing_key.is_some() {
                self.thinking.push_str(reasoning);
            }
            emit.emit(Event::ThinkingDelta {
                block: self.blocks - 1,
                thinking: reasoning,
            });
        }
        for text in [delta.content.as_deref(), delta.refusal.as_deref()] {
            if let Some(text) = text.filter(|s| !s.is_empty()) {
                if self.open != Open::Text {
                    self.close(emit);
                    self.open_block(Open::Text, emit);
                }
                emit.emit(Event::TextDelta {
                    block: self.blocks - 1,
                    text,
                });
            }
        }
        for call in delta.tool_calls.iter() {
            self.tool_call(call, emit);
            if self.ended {
                return;
            }
        }
    }

    fn tool_call<S: Sink>(&mut self, call: &ToolCallDelta<'_>, emit: &mut S) {
        let position = match self.find_tool(call.index, call.id.as_deref()) {
            Some(position) => position,
            None => {
                self.close(emit);
                let id = match call.id.as_deref() {
                    Some(id) if !id.is_empty() => id.to_owned(),
                    _ => format!("toolu_{}_{}", self.message_id, self.tools.len()),
                };
                let block = self.blocks;
                emit.emit(Event::BlockStart {
                    block,
                    kind: BlockKind::ToolUse {
                        id: &id,
                        name: call.name.as_deref().unwrap_or(""),
                    },
                });
                self.tools.push(ToolCall {
                    upstream_index: call.index,
                    id,
                    block,
                });
                self.blocks += 1;
                self.open = Open::Tool(self.tools.len() - 1);
                self.tools.len() - 1
            }
        };
        if let Some(arguments) = call.arguments.as_deref().filter(|s| !s.is_empty()) {
            if self.open != Open::Tool(position) {
                self.fail("api_error", MSG_INTERLEAVED, emit);
                return;
            }
            emit.emit(Event::ToolArgumentsDelta {
                block: self.tools[position].block,
                partial_json: arguments,
            });
        }
    }

    /// Chat tool calls are keyed by `index`; Mistral-style calls without one by `id`; a
    /// fragment with neither continues the latest call.
    fn find_tool(&self, index: Option<u64>, id: Option<&str>) -> Option<usize> {
        match (index, id) {
            (Some(index), _) => self
                .tools
                .iter()
                .position(|t| t.upstream_index == Some(index)),
            (None, Some(id)) if !id.is_empty() => self.tools.iter().position(|t| t.id == id),
            _ => self.tools.len().checked_sub(1),
        }
    }

    fn open_block<S: Sink>(&mut self, kind: Open, emit: &mut S) {
        let block = self.blocks;
        self.blocks += 1;
        self.open = kind;
        let kind = if kind == Open::Text {
            BlockKind::Text
        } else {
            BlockKind::Thinking
        };
        emit.emit(Event::BlockStart { block, kind });
    }

    fn close<S: Sink>(&mut self, emit: &mut S) {
        if self.open == Open::None {
            return;
        }
        let block = self.blocks - 1;
        if self.open == Open::Thinking {
            if let Some(key) = &self.signing_key {
                let signature = sign_thinking(&self.thinking, key);
                emit.emit(Event::SignatureDelta {
                    block,
                    signature: &signature,
                });
            }
            self.thinking.clear();
        }
        emit.emit(Event::BlockStop { block });
        self.open = Open::None;
    }

    fn end<S: Sink>(&mut self, emit: &mut S) {
        self.close(emit);
        let reason = mapping::stop_reason(self.finish_reason.as_deref(), !self.tools.is_empty());
        emit.emit(Event::StopReason { reason });
        emit.emit(Event::MessageStop);
        self.ended = true;
    }

    fn fail<S: Sink>(&mut self, kind: &'static str, message: &str, emit: &mut S) {
        emit.emit(Event::Error { kind, message });
        self.ended = true;
    }
}
