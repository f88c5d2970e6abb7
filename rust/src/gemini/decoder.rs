//! Gemini `streamGenerateContent?alt=sse` stream -> canonical events (twin of
//! python/hydra_proxy/gemini/decoder.py, which documents the grammar and the decisions it
//! shares with the non-streamed reader, hydra_proxy.gemini.response).
//!
//! Parts become blocks: `thought` text -> thinking (live), text -> text, `functionCall` ->
//! tool_use with a stable id; a `thoughtSignature` closes the thinking before its part's
//! block with the proxy's `gts` carrier. Streamed arguments (`partialArgs` with a
//! `jsonPath`) are assembled per call and sent whole when the call ends.

use serde_json::Value;

use super::chunk::{read_chunk, Call, Chunk, Node, Part, ReadError};
use super::errors::gemini_error;
use super::mapping;
use crate::json::{self, trim_json_ws};
use crate::signature::{sign_carried, sign_thinking, KIND_GEMINI_THOUGHT_SIGNATURE};
use crate::stream::messages::{MSG_BAD_SHAPE, MSG_CUT_OFF, MSG_INVALID_JSON};
use crate::stream::{start_once, BlockKind, Decoder, Event, Sink, Usage};

pub const MSG_BAD_JSON_PATH: &str =
    "the upstream sent a function-call argument path this proxy cannot read";
/// Function-call arguments nested deeper than this are refused: the Python twin writes them
/// with orjson, whose serialiser stops there.
const MAX_ARGUMENTS_DEPTH: usize = 254;
pub const MSG_ARGUMENTS_TOO_DEEP: &str =
    "the upstream sent function-call arguments nested deeper than 254 levels";
/// The key a non-object `args` is wrapped in (python/hydra_proxy/chat/tool_arguments.py).
const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Text,
    Thinking,
    Tool,
}

pub struct GeminiDecoder {
    /// Names the tool calls (`tool_use_id`).
    message_id: String,
    /// The signing key, empty without one (thought signatures are carried regardless).
    key: Vec<u8>,
    started: bool,
    ended: bool,
    /// The next block id; the open one is `blocks - 1`.
    blocks: u64,
    open: Open,
    /// The open thinking block's text, to sign.
    thinking: String,
    /// Parts seen so far: the index of the next one.
    parts: u64,
    calls: u64,
    /// The members of the open streamed call's arguments.
    pending: Option<Vec<(String, Node)>>,
    finish_reason: Option<String>,
    finished: bool,
    prompt: Option<u64>,
    cached: Option<u64>,
    candidates: Option<u64>,
    thoughts: Option<u64>,
}

impl GeminiDecoder {
    pub fn new(message_id: &str, signing_key: Option<&[u8]>) -> Self {
        GeminiDecoder {
            message_id: message_id.to_owned(),
            key: signing_key.unwrap_or_default().to_vec(),
            started: false,
            ended: false,
            blocks: 0,
            open: Open::None,
            thinking: String::new(),
            parts: 0,
            calls: 0,
            pending: None,
            finish_reason: None,
            finished: false,
            prompt: None,
            cached: None,
            candidates: None,
            thoughts: None,
        }
    }
}

impl Decoder for GeminiDecoder {
    fn begin<S: Sink>(&mut self, emit: &mut S) {
        start_once(&mut self.started, emit);
    }

    fn event<S: Sink>(&mut self, _event: Option<&[u8]>, data: &[u8], emit: &mut S) {
        if self.ended || trim_json_ws(data).is_empty() {
            return;
        }
        let text = json::text(data);
        match read_chunk(&text) {
            Ok(chunk) if chunk.has_error => self.upstream_error(&text, emit),
            Ok(chunk) => self.chunk(chunk, emit),
            // An error object is reported as such even when the rest of the chunk is odd.
            Err(ReadError::BadShape { has_error: true }) => self.upstream_error(&text, emit),
            Err(ReadError::BadShape { has_error: false }) => {
                self.fail("api_error", MSG_BAD_SHAPE, emit);
            }
            Err(ReadError::InvalidJson) => self.fail("api_error", MSG_INVALID_JSON, emit),
        }
    }

    fn finish<S: Sink>(&mut self, emit: &mut S) {
        if self.finished {
            self.end(emit);
        } else {
            self.fail("api_error", MSG_CUT_OFF, emit);
        }
    }
}

/// The tool_use id for the function call at part `index` of a reply (as
/// hydra_proxy.gemini.response.tool_use_id).
fn tool_use_id(message_id: &str, index: u64) -> String {
    let stem = message_id.strip_prefix("msg_").unwrap_or(message_id);
    format!("toolu_{stem}_{index}")
}

fn is_anthropic_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Python's `str.isspace` for one character (Rust's also lacks U+001C..U+001F).
pub(super) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Whether a thoughtSignature is base64 text, standard or URL-safe, padded or not
/// (hydra_proxy.gemini.thought_signature.signature_bytes).
fn is_base64(signature: &str) -> bool {
    let text = signature.trim_end_matches('=');
    text.len() % 4 != 1
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_'))
}

/// One step of a `jsonPath`: `.key`, `['key']` or `[index]`.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'-')
}

fn parse_path(path: &str) -> Option<Vec<Step<'_>>> {
    let rest = path.strip_prefix('$')?;
    let bytes = rest.as_bytes();
    let mut steps = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'.' {
            let len = bytes[at + 1..]
                .iter()
                .take_while(|b| is_key_byte(**b))
                .count();
            if len == 0 {
                return None;
            }
            steps.push(Step::Key(&rest[at + 1..at + 1 + len]));
            at += 1 + len;
        } else if rest[at..].starts_with("['") {
            let len = bytes[at + 2..]
                .iter()
                .take_while(|b| **b != b'\'' && **b != b'\\')
                .count();
            if !rest[at + 2 + len..].starts_with("']") {
                return None;
            }
            steps.push(Step::Key(&rest[at + 2..at + 2 + len]));
            at += 4 + len;
        } else if bytes[at] == b'[' {
            let len = bytes[at + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if !(1..=9).contains(&len) || bytes.get(at + 1 + len) != Some(&b']') {
                return None;
            }
            steps.push(Step::Index(rest[at + 1..at + 1 + len].parse().ok()?));
            at += 2 + len;
        } else {
            return None;
        }
    }
    (!steps.is_empty()).then_some(steps)
}

/// Set the value at `steps` under `node`, appending to a string already there (the
/// pieces of a streamed string); None for a path it cannot follow.
fn assign(node: &mut Node, steps: &[Step<'_>], value: Node) -> Option<()> {
    let (step, rest) = steps.split_first()?;
    let slot = match (node, step) {
        (Node::Array(items), Step::Index(index)) => {
            if *index > items.len() {
                return None; // an index must continue the array, not leave holes
            }
            if *index == items.len() {
                items.push(Node::Null);
            }
            &mut items[*index]
        }
        (Node::Object(members), Step::Key(key)) => {
            let at = match members.iter().position(|(k, _)| k == key) {
                Some(at) => at,
                None => {
                    members.push(((*key).to_owned(), Node::Null));
                    members.len() - 1
                }
            };
            &mut members[at].1
        }
        _ => return None,
    };
    if rest.is_empty() {
        *slot = match (std::mem::replace(slot, Node::Null), value) {
            (Node::Str(mut current), Node::Str(piece)) => {
                current.push_str(&piece);
                Node::Str(current)
            }
            (_, value) => value,
        };
        return Some(());
    }
    if *slot == Node::Null {
        *slot = match rest[0] {
            Step::Index(_) => Node::Array(Vec::new()),
            Step::Key(_) => Node::Object(Vec::new()),
        };
    }
    assign(slot, rest, value)
}

impl GeminiDecoder {
    fn chunk<S: Sink>(&mut self, chunk: Chunk<'_>, emit: &mut S) {
        if let Some(usage) = chunk.usage {
            if let Some(prompt) = usage.prompt {
                self.prompt = Some(prompt);
                self.cached = Some(usage.cached.unwrap_or(0));
            }
            if usage.candidates.is_some() || usage.thoughts.is_some() {
                self.candidates = Some(usage.candidates.unwrap_or(0));
                self.thoughts = Some(usage.thoughts.unwrap_or(0));
            }
            emit.emit(Event::Usage(self.usage()));
        }
        for part in &chunk.parts {
            self.part(part, emit);
            if self.ended {
                return;
            }
        }
        if let Some(finish_reason) = chunk.finish_reason.as_deref() {
            if let Some(message) =
                mapping::finish_error(finish_reason, chunk.finish_message.as_deref())
            {
                self.fail("api_error", &message, emit);
                return;
            }
            self.close(emit);
            self.finish_reason = Some(finish_reason.to_owned());
            self.finished = true;
        } else if chunk.blocked && chunk.parts.is_empty() {
            self.close(emit);
            self.finish_reason = Some("SAFETY".to_owned()); // maps to refusal
            self.finished = true;
        }
    }

    /// The counts so far, as Anthropic counts them (None: not reported yet).
    fn usage(&self) -> Usage {
        let (input, output, cache_read) = mapping::anthropic_usage(
            self.prompt.unwrap_or(0),
            self.cached.unwrap_or(0),
            self.candidates.unwrap_or(0),
            self.thoughts.unwrap_or(0),
        );
        let has_prompt = self.prompt.is_some();
        Usage {
            input_tokens: has_prompt.then_some(input),
            cache_read_input_tokens: has_prompt.then_some(cache_read),
            cache_creation_input_tokens: None,
            output_tokens: self.candidates.is_some().then_some(output),
            reasoning_tokens: self.thoughts,
        }
    }

    fn upstream_error<S: Sink>(&mut self, text: &str, emit: &mut S) {
        // (The reader validated the text; serde_json only fails on nesting deeper than its
        // 128 levels, where orjson allows 1024.)
        let value = serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
        let (kind, message) = gemini_error(&value);
        self.fail(kind, &message, emit);
    }

    fn part<S: Sink>(&mut self, part: &Part<'_>, emit: &mut S) {
        let index = self.parts;
        self.parts += 1;
        let signature = part.thought_signature.as_deref().filter(|s| !s.is_empty());
        if self.pending.is_some() {
            if let Some(call) = part.call.as_ref().filter(|call| call.name.is_none()) {
                self.continue_call(call, emit); // no name: this call's next piece
                return;
            }
            self.end_call(emit);
            if self.ended {
                return;
            }
        }
        if part.thought {
            self.thought(part.text.as_deref(), signature, emit);
            return;
        }
        if let Some(signature) = signature {
            self.close_thinking(signature, emit);
        } else if self.open == Open::Thinking {
            self.close(emit); // any other part ends the thinking (as not streamed)
        }
        if let Some(call) = &part.call {
            self.call(call, index, emit);
            return;
        }
        let other;
        let content = match part.text.as_deref() {
            Some(text) => Some(text),
            None => {
                other = part.other_text();
                other.as_deref()
            }
        };
        if let Some(content) = content.filter(|c| !c.is_empty()) {
            self.text(content, emit);
        }
    }

    /// A thought part: its text streams into the open thinking block, and its signature
    /// (when it has one) closes that block.
    fn thought<S: Sink>(&mut self, text: Option<&str>, signature: Option<&str>, emit: &mut S) {
        if let Some(text) = text.filter(|t| !t.is_empty()) {
            self.open_thinking(emit);
            if !self.key.is_empty() {
                self.thinking.push_str(text);
            }
            emit.emit(Event::ThinkingDelta {
                block: self.blocks - 1,
                thinking: text,
            });
        }
        if let Some(signature) = signature {
            self.close_thinking(signature, emit);
        }
    }

    /// A part's text (or the text a part shows) goes into the open text block, or opens
    /// one; whitespace alone opens none.
    fn text<S: Sink>(&mut self, content: &str, emit: &mut S) {
        if !content.trim_matches(is_py_space).is_empty() {
            if self.open != Open::Text {
                self.close(emit);
                self.open_block(Open::Text, BlockKind::Text, emit);
            }
        } else if self.open != Open::Text {
            return; // whitespace: no block of its own (as not streamed)
        }
        emit.emit(Event::TextDelta {
            block: self.blocks - 1,
            text: content,
        });
    }

    fn call<S: Sink>(&mut self, call: &Call<'_>, index: u64, emit: &mut S) {
        if call.name.is_none()
            && call.args.is_none()
            && call.partial_args.is_empty()
            && !call.will_continue
        {
            return; // an empty `functionCall: {}` with no call open ends nothing
        }
        self.close(emit);
        let id = match call.id.as_deref() {
            Some(id) if is_anthropic_id(id) => id.to_owned(),
            _ => tool_use_id(&self.message_id, index),
        };
        let name = call.name.as_deref().unwrap_or("");
        self.open_block(Open::Tool, BlockKind::ToolUse { id: &id, name }, emit);
        self.calls += 1;
        if !call.will_continue && call.partial_args.is_empty() {
            if self.arguments(call.args.clone(), emit) {
                self.close(emit);
            }
            return;
        }
        self.pending = Some(match &call.args {
            Some(Node::Object(members)) => members.clone(),
            _ => Vec::new(),
        });
        self.continue_call(call, emit);
    }

    fn continue_call<S: Sink>(&mut self, call: &Call<'_>, emit: &mut S) {
        let Some(members) = self.pending.take() else {
            return;
        };
        let mut root = Node::Object(members);
        for arg in &call.partial_args {
            let path = arg.json_path.as_deref().unwrap_or("");
            let assigned =
                parse_path(path).and_then(|steps| assign(&mut root, &steps, arg.value()));
            if assigned.is_none() {
                self.fail("api_error", MSG_BAD_JSON_PATH, emit);
                return;
            }
        }
        let Node::Object(members) = root else {
            unreachable!("the root stays an object")
        };
        self.pending = Some(members);
        if !call.will_continue {
            self.end_call(emit);
        }
    }

    fn end_call<S: Sink>(&mut self, emit: &mut S) {
        let members = self.pending.take().unwrap_or_default();
        let args = (!members.is_empty()).then_some(Node::Object(members));
        if self.arguments(args, emit) {
            self.close(emit);
        }
    }

    /// Emit a call's arguments; false when they are refused (the stream has failed).
    fn arguments<S: Sink>(&mut self, args: Option<Node>, emit: &mut S) -> bool {
        let Some(args) = args else {
            return true;
        };
        if args.depth() > MAX_ARGUMENTS_DEPTH {
            self.fail("api_error", MSG_ARGUMENTS_TOO_DEEP, emit);
            return false;
        }
        let args = match args {
            Node::Object(_) => args,
            other => {
                let mut raw = Vec::new();
                other.write(&mut raw);
                let raw = String::from_utf8(raw).expect("JSON text is UTF-8");
                Node::Object(vec![(RAW_ARGUMENTS_KEY.to_owned(), Node::Str(raw))])
            }
        };
        let mut json = Vec::new();
        args.write(&mut json);
        let json = String::from_utf8(json).expect("JSON text is UTF-8");
        emit.emit(Event::ToolArgumentsDelta {
            block: self.blocks - 1,
            partial_json: &json,
        });
        true
    }

    fn open_block<S: Sink>(&mut self, open: Open, kind: BlockKind<'_>, emit: &mut S) {
        self.open = open;
        emit.emit(Event::BlockStart {
            block: self.blocks,
            kind,
        });
        self.blocks += 1;
    }

    fn open_thinking<S: Sink>(&mut self, emit: &mut S) {
        if self.open != Open::Thinking {
            self.close(emit);
            self.open_block(Open::Thinking, BlockKind::Thinking, emit);
        }
    }

    /// End the thinking so far with the carrier of `thought_signature`.
    fn close_thinking<S: Sink>(&mut self, thought_signature: &str, emit: &mut S) {
        let carrier = if is_base64(thought_signature) {
            sign_carried(KIND_GEMINI_THOUGHT_SIGNATURE, thought_signature, &self.key)
        } else {
            None
        };
        let Some(carrier) = carrier else {
            // Not base64: not a signature Gemini could take back.
            if self.open == Open::Thinking {
                self.close(emit);
            }
            return;
        };
        self.open_thinking(emit);
        self.thinking.clear();
        self.open = Open::None;
        let block = self.blocks - 1;
        emit.emit(Event::SignatureDelta {
            block,
            signature: &carrier,
        });
        emit.emit(Event::BlockStop { block });
    }

    fn close<S: Sink>(&mut self, emit: &mut S) {
        if self.pending.is_some() && self.open == Open::Tool {
            self.end_call(emit);
            return;
        }
        if self.open == Open::None {
            return;
        }
        let block = self.blocks - 1;
        if self.open == Open::Thinking {
            if !self.key.is_empty() {
                let signature = sign_thinking(&self.thinking, &self.key);
                emit.emit(Event::SignatureDelta {
                    block,
                    signature: &signature,
                });
            }
            self.thinking.clear();
        }
        self.open = Open::None;
        emit.emit(Event::BlockStop { block });
    }

    fn end<S: Sink>(&mut self, emit: &mut S) {
        self.close(emit);
        let reason = mapping::stop_reason(self.finish_reason.as_deref(), self.calls > 0);
        emit.emit(Event::StopReason { reason });
        emit.emit(Event::MessageStop);
        self.ended = true;
    }

    fn fail<S: Sink>(&mut self, kind: &'static str, message: &str, emit: &mut S) {
        emit.emit(Event::Error { kind, message });
        self.ended = true;
    }
}
