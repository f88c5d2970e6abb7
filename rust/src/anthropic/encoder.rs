//! Canonical events -> Anthropic Messages SSE (twin of
//! python/hydra_proxy/anthropic/encoder.py, which documents the grammar).
//!
//! Its quirks: message_start comes first, before anything else the client sees (a ping or
//! an error included), with the proxy's message id and model and the request's estimated
//! input tokens; blocks are numbered 0, 1, 2... in the order they start, one open at a
//! time; message_delta carries the stop reason and the final usage, then message_stop.

use super::output as out;
use crate::stream::Ending;
use crate::stream::{BlockKind, Encoder, EndState, Event, Outcome, Usage};

pub struct AnthropicEncoder {
    message_id: String,
    model: String,
    estimate: u64,
    started: bool,
    ending: EndState,
    /// Blocks started so far (the next index), and the open one: (decoder id, index).
    blocks: u64,
    open: Option<(u64, u64)>,
    /// The open results block: (decoder id, search id, results so far as JSON).
    results: Option<(u64, String, Vec<u8>)>,
}

impl AnthropicEncoder {
    pub fn new(message_id: &str, model: &str, input_tokens: u64) -> Self {
        AnthropicEncoder {
            message_id: message_id.to_owned(),
            model: model.to_owned(),
            estimate: input_tokens,
            started: false,
            ending: EndState::default(),
            blocks: 0,
            open: None,
            results: None,
        }
    }

    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.started = true;
            out::message_start(out, &self.message_id, &self.model, self.estimate);
        }
    }

    /// The Anthropic index of an open block's delta; `None` for a block with no Anthropic
    /// form (a server tool block, which only an Anthropic upstream sends, and that one is
    /// relayed as it is).
    fn index(&self, block: u64) -> Option<u64> {
        self.open.filter(|(id, _)| *id == block).map(|(_, i)| i)
    }

    fn block_start(&mut self, out: &mut Vec<u8>, block: u64, kind: BlockKind<'_>) {
        let index = self.blocks;
        match kind {
            BlockKind::Text => out::text_start(out, index),
            BlockKind::Thinking => out::thinking_start(out, index),
            BlockKind::RedactedThinking { data } => out::redacted_thinking_start(out, index, data),
            BlockKind::ToolUse { id, name } => out::tool_use_start(out, index, id, name),
            BlockKind::WebSearch { id } => out::server_tool_use_start(out, index, id, "web_search"),
            BlockKind::WebSearchResults { search_id } => {
                self.results = Some((block, search_id.to_owned(), Vec::new()));
                return;
            }
            BlockKind::ServerTool { .. } => return,
        }
        self.blocks += 1;
        self.open = Some((block, index));
    }

    fn block_stop(&mut self, out: &mut Vec<u8>, block: u64) {
        if self.results.as_ref().is_some_and(|(id, _, _)| *id == block) {
            if let Some((_, search_id, results)) = self.results.take() {
                out::web_search_tool_result(out, self.blocks, &search_id, &results);
                self.blocks += 1;
            }
            return;
        }
        if let Some(index) = self.index(block) {
            out::block_stop(out, index);
            self.open = None;
        }
    }
}

impl Ending for AnthropicEncoder {
    fn ending_mut(&mut self) -> &mut EndState {
        &mut self.ending
    }

    fn end(&mut self, out: &mut Vec<u8>) {
        let stop_reason = self
            .ending
            .stop_reason
            .get_or_insert_with(|| "end_turn".to_owned());
        let (input, cached, output) = usage(&self.ending.usage, self.estimate);
        out::message_delta(out, stop_reason, input, cached, output);
        out.extend_from_slice(out::MESSAGE_STOP);
        self.ending.outcome = Outcome::Complete;
    }

    fn fail(&mut self, out: &mut Vec<u8>, error_type: &'static str, message: &str) {
        out::error(out, error_type, message);
        self.ending.outcome = Outcome::Failed(error_type, message.to_owned());
    }
}

/// (input_tokens, cache_read_input_tokens, output_tokens); the estimate until the
/// upstream counts the input.
fn usage(usage: &Usage, estimate: u64) -> (u64, u64, u64) {
    (
        usage.input_tokens.unwrap_or(estimate),
        usage.cache_read_input_tokens.unwrap_or(0),
        usage.output_tokens.unwrap_or(0),
    )
}

impl Encoder for AnthropicEncoder {
    type Usage = (u64, u64, u64);

    #[inline(always)]
    fn event(&mut self, out: &mut Vec<u8>, event: Event<'_>) {
        // Deltas and stops follow their block's start, which started the message.
        if !matches!(
            event,
            Event::TextDelta { .. }
                | Event::ToolArgumentsDelta { .. }
                | Event::ThinkingDelta { .. }
                | Event::SignatureDelta { .. }
                | Event::CitationDelta { .. }
                | Event::SearchResult { .. }
                | Event::BlockStop { .. }
        ) {
            self.ensure_started(out);
        }
        match event {
            Event::TextDelta { block, text } => {
                if let Some(index) = self.index(block) {
                    out::text_delta(out, index, text);
                }
            }
            Event::ToolArgumentsDelta {
                block,
                partial_json,
            } => {
                if let Some(index) = self.index(block) {
                    out::input_json_delta(out, index, partial_json);
                }
            }
            Event::ThinkingDelta { block, thinking } => {
                if let Some(index) = self.index(block) {
                    out::thinking_delta(out, index, thinking);
                }
            }
            Event::SignatureDelta { block, signature } => {
                if let Some(index) = self.index(block) {
                    out::signature_delta(out, index, signature);
                }
            }
            Event::CitationDelta { block, citation } => {
                if let Some(index) = self.index(block) {
                    out::citations_delta(out, index, citation);
                }
            }
            Event::SearchResult { block, url, title } => {
                if let Some((_, _, results)) = self.results.as_mut().filter(|r| r.0 == block) {
                    out::web_search_result(results, url, title);
                }
            }
            Event::BlockStart { block, kind } => self.block_start(out, block, kind),
            Event::BlockStop { block } => self.block_stop(out, block),
            Event::MessageStart { .. } => {}
            Event::Ping => out.extend_from_slice(out::PING),
            event => self.message_event(out, event),
        }
    }

    fn end_state(&self) -> &EndState {
        &self.ending
    }

    fn has_content(&self) -> bool {
        self.blocks > 0
    }

    fn stop_reason(&self) -> Option<&str> {
        if self.complete() {
            self.ending.stop_reason.as_deref()
        } else {
            None
        }
    }

    fn usage(&self) -> (u64, u64, u64) {
        usage(&self.ending.usage, self.estimate)
    }
}
