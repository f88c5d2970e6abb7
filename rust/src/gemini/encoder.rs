//! Canonical events -> Gemini `streamGenerateContent?alt=sse` (twin of
//! python/hydra_proxy/gemini/encoder.py, which documents the grammar).
//!
//! Its quirks: tool calls sent whole when their block ends; the thinking an upstream needs
//! back carried in the `thoughtSignature` of the next part (the reasoning carrier of
//! responses::shared, base64); an error chunk, never a finishReason, for a failure.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::output::{self as out, ChunkWriter};
use crate::continuation::Block;
use crate::json::{parse, trim_json_ws};
use crate::responses::shared::encode_carrier;
use crate::stream::{BlockKind, Encoder, Event, Outcome, Usage};

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
    outcome: Outcome,
    /// Open blocks by decoder id.
    blocks: BTreeMap<u64, Kind>,
    /// Thinking to carry on the next part.
    replay: Vec<Block>,
    sent: bool,
    stop_reason: Option<String>,
    finish_reason: Option<&'static str>,
    usage: Usage,
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
            outcome: Outcome::Open,
            blocks: BTreeMap::new(),
            replay: Vec::new(),
            sent: false,
            stop_reason: None,
            finish_reason: None,
            usage: Usage::default(),
        }
    }

    /// (promptTokenCount, cachedContentTokenCount, output tokens).
    fn counts(&self) -> (u128, u64, u64) {
        let usage = &self.usage;
        let cached = usage.cache_read_input_tokens.unwrap_or(0);
        let prompt = u128::from(usage.input_tokens.unwrap_or(0))
            + u128::from(cached)
            + u128::from(usage.cache_creation_input_tokens.unwrap_or(0));
        (prompt, cached, usage.output_tokens.unwrap_or(0))
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

    fn end(&mut self, out: &mut Vec<u8>) {
        let reason = out::finish_reason(self.stop_reason.as_deref());
        self.finish_reason = Some(reason);
        let (prompt, cached, output) = self.counts();
        let thoughts = self.usage.reasoning_tokens.unwrap_or(0).min(output);
        let signature = self.signature();
        self.writer.last(
            out,
            signature.as_deref(),
            reason,
            (prompt, cached, output - thoughts, thoughts),
        );
        self.sent = true;
        self.outcome = Outcome::Complete;
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
            Event::Usage(usage) => self.usage.update(&usage),
            Event::StopReason { reason } => self.stop_reason = Some(reason.to_owned()),
            Event::MessageStop => self.end(out),
            Event::Error { kind, message } => {
                out::error_chunk(out, kind, message);
                self.outcome = Outcome::Failed(kind, message.to_owned());
            }
            // Message start, citations, pings: no Gemini form.
            Event::MessageStart { .. }
            | Event::CitationDelta { .. }
            | Event::SearchResult { .. }
            | Event::Ping => {}
        }
    }

    fn outcome(&self) -> &Outcome {
        &self.outcome
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
        self.counts()
    }

    fn reasoning_tokens(&self) -> u64 {
        self.usage.reasoning_tokens.unwrap_or(0)
    }
}
