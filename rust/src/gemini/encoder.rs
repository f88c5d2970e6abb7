//! Canonical events -> Gemini `streamGenerateContent?alt=sse` (twin of
//! python/hydra_proxy/gemini/encoder.py, which documents the grammar).
//!
//! Its quirks: tool calls sent whole when their block ends; the thinking an upstream needs
//! back carried in the `thoughtSignature` of the next part (the reasoning carrier of
//! responses::reasoning, base64); an error chunk, never a finishReason, for a failure.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::output::{self as out, ChunkWriter};
use crate::continuation::Block;
use crate::json::{parse, trim_json_ws};
use crate::responses::reasoning::encode_carrier;
use crate::stream::Ending;
use crate::stream::{BlockKind, Encoder, EndState, Event, Outcome};

/// The key under which arguments that are no JSON object are kept
/// (canonical.arguments.RAW_ARGUMENTS_KEY).
const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

enum Kind {
    Text,
    Thinking {
        text: String,
        signature: String,
    },
    Tool {
        id: String,
        name: String,
        arguments: String,
    },
    Redacted {
        data: String,
    },
    Other,
}

/// A tool call's `args`: its arguments when they are one JSON object, else a lossless
/// stand-in (gemini.encoder.call_args).
fn call_args(arguments: &str) -> String {
    let trimmed = trim_json_ws(arguments.as_bytes());
    if trimmed.is_empty() {
        return "{}".to_owned();
    }
    // Trimming JSON whitespace keeps the text UTF-8.
    let text = std::str::from_utf8(trimmed).unwrap_or(arguments);
    if let Some(serde_json::Value::Object(_)) = parse(text) {
        return text.to_owned();
    }
    let mut raw = Vec::with_capacity(arguments.len() + 24);
    raw.extend_from_slice(b"{\"");
    raw.extend_from_slice(RAW_ARGUMENTS_KEY.as_bytes());
    raw.extend_from_slice(b"\":");
    crate::json::write::write_str(&mut raw, arguments);
    raw.push(b'}');
    String::from_utf8(raw).unwrap_or_default()
}

pub struct GeminiEncoder {
    writer: ChunkWriter,
    include_thoughts: bool,
    signing_key: Option<Vec<u8>>,
    ending: EndState,
    /// Open blocks by decoder id.
    blocks: BTreeMap<u64, Kind>,
    /// Thinking to carry on the next part.
    replay: Vec<Block>,
    sent: bool,
    finish_reason: Option<&'static str>,
}

impl GeminiEncoder {
    pub fn new(
        response_id: &str,
        model: &str,
        include_thoughts: bool,
        signing_key: Option<&[u8]>,
    ) -> Self {
        GeminiEncoder {
            writer: ChunkWriter::new(response_id, model),
            include_thoughts,
            signing_key: signing_key.filter(|k| !k.is_empty()).map(<[u8]>::to_vec),
            ending: EndState::default(),
            blocks: BTreeMap::new(),
            replay: Vec::new(),
            sent: false,
            finish_reason: None,
        }
    }

    /// The carrier of the thinking waiting for a part (None: there is none).
    fn signature(&mut self) -> Option<String> {
        if self.replay.is_empty() {
            return None;
        }
        let blocks = std::mem::take(&mut self.replay);
        let key = self.signing_key.as_ref()?;
        Some(STANDARD.encode(encode_carrier(&blocks, key)))
    }

    fn block_start(&mut self, block: u64, kind: BlockKind<'_>) {
        let kind = match kind {
            BlockKind::Text => Kind::Text,
            BlockKind::Thinking => Kind::Thinking {
                text: String::new(),
                signature: String::new(),
            },
            BlockKind::RedactedThinking { data } => Kind::Redacted {
                data: data.to_owned(),
            },
            BlockKind::ToolUse { id, name } => Kind::Tool {
                id: id.to_owned(),
                name: name.to_owned(),
                arguments: String::new(),
            },
            // Run by the provider: a Gemini client sees the answer, not the search.
            BlockKind::ServerTool { .. }
            | BlockKind::WebSearch { .. }
            | BlockKind::WebSearchResults { .. } => Kind::Other,
        };
        self.blocks.insert(block, kind); // (a restarted id replaces the block)
    }

    fn block_stop(&mut self, out: &mut Vec<u8>, block: u64) {
        match self.blocks.remove(&block) {
            Some(Kind::Tool {
                id,
                name,
                arguments,
            }) => {
                let args = call_args(&arguments);
                let signature = self.signature();
                self.sent = true;
                self.writer.part(out, |out| {
                    out::call_part(out, &id, &name, &args, signature.as_deref());
                });
            }
            Some(Kind::Thinking { text, signature }) if !signature.is_empty() => {
                self.replay.push(Block::Thinking { text, signature });
            }
            Some(Kind::Redacted { data }) => self.replay.push(Block::Redacted { data }),
            _ => {}
        }
    }
}

impl Ending for GeminiEncoder {
    fn ending_mut(&mut self) -> &mut EndState {
        &mut self.ending
    }

    fn end(&mut self, out: &mut Vec<u8>) {
        let reason = out::finish_reason(self.ending.stop_reason.as_deref());
        self.finish_reason = Some(reason);
        let (prompt, cached, output) = self.usage();
        let thoughts = self.ending.usage.reasoning_tokens.unwrap_or(0).min(output);
        let signature = self.signature();
        self.writer.last(
            out,
            signature.as_deref(),
            reason,
            (prompt, cached, output - thoughts, thoughts),
        );
        self.sent = true;
        self.ending.outcome = Outcome::Complete;
    }

    fn fail(&mut self, out: &mut Vec<u8>, error_type: &'static str, message: &str) {
        out::error_chunk(out, error_type, message);
        self.ending.outcome = Outcome::Failed(error_type, message.to_owned());
    }
}

impl Encoder for GeminiEncoder {
    /// (promptTokenCount, cachedContentTokenCount, output tokens), as Gemini counts them.
    type Usage = (u128, u64, u64);

    #[inline]
    fn event(&mut self, out: &mut Vec<u8>, event: Event<'_>) {
        match event {
            Event::TextDelta { block, text } => {
                if let Some(Kind::Text) = self.blocks.get(&block) {
                    let signature = self.signature();
                    self.sent = true;
                    self.writer.part(out, |out| {
                        out::text_part(out, text, signature.as_deref(), false);
                    });
                }
            }
            Event::ThinkingDelta { block, thinking } => {
                if let Some(Kind::Thinking { text, .. }) = self.blocks.get_mut(&block) {
                    text.push_str(thinking);
                    if self.include_thoughts {
                        self.sent = true;
                        self.writer
                            .part(out, |out| out::text_part(out, thinking, None, true));
                    }
                }
            }
            Event::ToolArgumentsDelta {
                block,
                partial_json,
            } => {
                if let Some(Kind::Tool { arguments, .. }) = self.blocks.get_mut(&block) {
                    arguments.push_str(partial_json);
                }
            }
            Event::SignatureDelta { block, signature } => {
                if let Some(Kind::Thinking {
                    signature: mine, ..
                }) = self.blocks.get_mut(&block)
                {
                    signature.clone_into(mine);
                }
            }
            Event::BlockStart { block, kind } => self.block_start(block, kind),
            Event::BlockStop { block } => self.block_stop(out, block),
            // Message start, citations, pings: no Gemini form.
            Event::MessageStart { .. }
            | Event::CitationDelta { .. }
            | Event::SearchResult { .. }
            | Event::Ping => {}
            event => self.message_event(out, event),
        }
    }

    fn end_state(&self) -> &EndState {
        &self.ending
    }

    /// A chunk (and so a response) has been emitted.
    fn has_content(&self) -> bool {
        self.sent
    }

    /// The Gemini finishReason, once the stream has ended cleanly.
    fn stop_reason(&self) -> Option<&str> {
        self.finish_reason
    }

    fn usage(&self) -> (u128, u64, u64) {
        self.ending.usage.prompt_counts(0)
    }
}
