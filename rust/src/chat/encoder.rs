//! Canonical events -> OpenAI Chat Completions SSE (twin of
//! python/hydra_proxy/chat/encoder.py, which documents the grammar).
//!
//! Its quirks: a role chunk first; tool calls numbered by their own `index` (counting
//! tool calls, not blocks), "{}" for a tool without arguments; a text block's URL citations
//! as one `annotations` chunk at its end; no form for server-tool blocks and other
//! citations (their text answer is sent); and the continuation suffix, which
//! carries a thinking block's replay state through Chat clients inside
//! `reasoning_content` (continuation.rs), sent as the block ends so that it comes before
//! the text or tool call that follows.

use std::collections::BTreeMap;

use super::mapping;
use super::output::{self as out, ChunkWriter};
use crate::continuation::{self, Block};
use crate::stream::Ending;
use crate::stream::{BlockKind, Encoder, EndState, Event, Outcome};

enum Kind {
    /// Where its text starts in `content` (code points), its URL citations (url, title).
    Text {
        start: u64,
        citations: Vec<(String, String)>,
    },
    Thinking {
        text: String,
        signature: String,
    },
    Tool {
        index: u64,
        sent_arguments: bool,
    },
    Redacted {
        data: String,
    },
    Other,
}

pub struct ChatEncoder {
    writer: ChunkWriter,
    include_usage: bool,
    continuation_key: Option<Vec<u8>>,
    started: bool,
    ending: EndState,
    /// Open blocks by decoder id.
    blocks: BTreeMap<u64, Kind>,
    tools: u64,
    finish_reason: Option<&'static str>,
    /// Code points of content sent.
    length: u64,
}

/// A citation read for its url and title only (the cited text is skipped, not copied).
#[derive(serde::Deserialize)]
struct CitationFields<'a> {
    #[serde(borrow, default)]
    url: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    title: Option<&'a serde_json::value::RawValue>,
}

/// (url, title) of a citation that carries a URL (`canonical.message.url_citations`); a
/// value of another type than a string counts as missing, as the Python twin reads it.
fn url_citation(citation: &str) -> Option<(String, String)> {
    let string = |raw: Option<&serde_json::value::RawValue>| {
        raw.and_then(|r| serde_json::from_str::<std::borrow::Cow<'_, str>>(r.get()).ok())
            .map(std::borrow::Cow::into_owned)
    };
    let (url, title) = match serde_json::from_str::<CitationFields<'_>>(citation) {
        Ok(fields) => (string(fields.url), string(fields.title)),
        // Not an object, or one with a repeated key: read as a tree, the last key wins.
        Err(_) => {
            let Some(serde_json::Value::Object(value)) = crate::json::parse(citation) else {
                return None;
            };
            let field = |key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_owned);
            (field("url"), field("title"))
        }
    };
    Some((url.filter(|u| !u.is_empty())?, title.unwrap_or_default()))
}

impl ChatEncoder {
    pub fn new(
        completion_id: &str,
        model: &str,
        created: u64,
        include_usage: bool,
        continuation_key: Option<&[u8]>,
    ) -> Self {
        ChatEncoder {
            writer: ChunkWriter::new(completion_id, model, created),
            include_usage,
            continuation_key: continuation_key
                .filter(|k| !k.is_empty())
                .map(<[u8]>::to_vec),
            started: false,
            ending: EndState::default(),
            blocks: BTreeMap::new(),
            tools: 0,
            finish_reason: None,
            length: 0,
        }
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.started = true;
            self.writer.role(out);
        }
    }

    fn block_start(&mut self, out: &mut Vec<u8>, block: u64, kind: BlockKind<'_>) {
        self.start(out);
        let kind = match kind {
            BlockKind::Text => Kind::Text {
                start: self.length,
                citations: Vec::new(),
            },
            BlockKind::Thinking => Kind::Thinking {
                text: String::new(),
                signature: String::new(),
            },
            BlockKind::RedactedThinking { data } => Kind::Redacted {
                data: data.to_owned(),
            },
            BlockKind::ToolUse { id, name } => {
                let index = self.tools;
                self.tools += 1;
                self.writer.tool_start(out, index, id, name);
                Kind::Tool {
                    index,
                    sent_arguments: false,
                }
            }
            // Run by the provider.
            BlockKind::ServerTool { .. }
            | BlockKind::WebSearch { .. }
            | BlockKind::WebSearchResults { .. } => Kind::Other,
        };
        self.blocks.insert(block, kind); // (a restarted id replaces the block)
    }

    fn block_stop(&mut self, out: &mut Vec<u8>, block: u64) {
        match self.blocks.remove(&block) {
            Some(Kind::Text { start, citations }) if !citations.is_empty() => {
                self.writer.annotations(out, start, self.length, &citations);
            }
            Some(Kind::Tool {
                index,
                sent_arguments: false,
            }) => {
                self.writer.tool_arguments(out, index, "{}"); // a tool without arguments
            }
            Some(Kind::Thinking { text, signature }) => {
                self.seal(out, &Block::Thinking { text, signature });
            }
            Some(Kind::Redacted { data }) => self.seal(out, &Block::Redacted { data }),
            _ => {}
        }
    }

    /// The block's continuation suffix, right after its reasoning.
    fn seal(&mut self, out: &mut Vec<u8>, block: &Block) {
        if let Some(key) = &self.continuation_key {
            let suffix = continuation::encode(std::slice::from_ref(block), key);
            self.writer.reasoning(out, &suffix);
        }
    }
}

impl Ending for ChatEncoder {
    fn ending_mut(&mut self) -> &mut EndState {
        &mut self.ending
    }

    fn end(&mut self, out: &mut Vec<u8>) {
        self.start(out);
        let reason = mapping::finish_reason(self.ending.stop_reason.as_deref());
        self.finish_reason = Some(reason);
        self.writer.finish(out, reason);
        if self.include_usage {
            let (prompt, cached, completion) = self.usage();
            self.writer.usage(out, prompt, completion, cached);
        }
        out.extend_from_slice(out::DONE);
        self.ending.outcome = Outcome::Complete;
    }

    fn fail(&mut self, out: &mut Vec<u8>, error_type: &'static str, message: &str) {
        out::error(out, error_type, message);
        self.ending.outcome = Outcome::Failed(error_type, message.to_owned());
    }
}

impl Encoder for ChatEncoder {
    /// (prompt_tokens, cached_tokens, completion_tokens), as OpenAI counts them.
    type Usage = (u128, u64, u64);

    #[inline]
    fn event(&mut self, out: &mut Vec<u8>, event: Event<'_>) {
        match event {
            Event::TextDelta { block, text } => {
                if let Some(Kind::Text { .. }) = self.blocks.get(&block) {
                    self.length += text.chars().count() as u64;
                    self.writer.content(out, text);
                }
            }
            Event::ThinkingDelta { block, thinking } => {
                if let Some(Kind::Thinking { text, .. }) = self.blocks.get_mut(&block) {
                    text.push_str(thinking);
                    self.writer.reasoning(out, thinking);
                }
            }
            Event::ToolArgumentsDelta {
                block,
                partial_json,
            } => {
                if let Some(Kind::Tool {
                    index,
                    sent_arguments,
                }) = self.blocks.get_mut(&block)
                {
                    *sent_arguments = true;
                    self.writer.tool_arguments(out, *index, partial_json);
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
            Event::CitationDelta { block, citation } => {
                if let Some(Kind::Text { citations, .. }) = self.blocks.get_mut(&block) {
                    citations.extend(url_citation(citation));
                }
            }
            Event::SearchResult { .. } => {} // no Chat form
            Event::BlockStart { block, kind } => self.block_start(out, block, kind),
            Event::BlockStop { block } => self.block_stop(out, block),
            Event::MessageStart { .. } => self.start(out),
            Event::Ping => out.extend_from_slice(out::PING),
            event => self.message_event(out, event),
        }
    }

    fn end_state(&self) -> &EndState {
        &self.ending
    }

    /// A role chunk (and so a response) has been emitted.
    fn has_content(&self) -> bool {
        self.started
    }

    /// The Chat finish_reason, once the stream has ended cleanly.
    fn stop_reason(&self) -> Option<&str> {
        self.finish_reason
    }

    fn usage(&self) -> (u128, u64, u64) {
        self.ending.usage.prompt_counts(0)
    }
}
