//! Canonical events -> OpenAI Responses SSE (twin of
//! python/hydra_proxy/responses/encoder.py, which documents the grammar).
//!
//! Its quirks: response.created and response.in_progress come first; output items open one
//! at a time, numbered by output_index, a run of text blocks one message item, a run of
//! thinking blocks one reasoning item (the client carrier of its blocks as
//! encrypted_content), each tool call one function_call or custom_tool_call item with the
//! client's name restored; every event has a sequence_number; the end is
//! response.completed, response.incomplete or response.failed, whose response repeats
//! every finished item.

use std::collections::HashMap;

use super::errors::response_error_code;
use super::items::{incomplete_reason, item_id};
use super::output::{self as out, ResponseTail};
use super::reasoning::encode_carrier;
use crate::continuation::Block;
use crate::json::parse;
use crate::json::trim_json_ws;
use crate::stream::Ending;
use crate::stream::{BlockKind, Encoder, EndState, Event, Outcome};

/// The delta and done events of a call's input, by the kind of call.
const CUSTOM_INPUT: (&str, &str) = (
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
);
const FUNCTION_ARGUMENTS: (&str, &str) = (
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
);

/// What a tool name sent upstream stands for in the client's request
/// (responses.tools.ToolOrigin).
#[derive(Clone, Debug, Default)]
pub struct ToolOrigin {
    pub name: String,
    pub namespace: Option<String>,
    pub custom: bool,
}

/// What the encoder needs to know of the request.
#[derive(Default)]
pub struct ResponsesOptions<'a> {
    /// The request echo, a JSON object's text (responses.encoder.echo_text).
    pub echo: &'a str,
    pub include_encrypted: bool,
    pub summary: bool,
    pub signing_key: Option<&'a [u8]>,
    /// Sent tool name -> the client's tool.
    pub tool_names: HashMap<String, ToolOrigin>,
}

enum Item {
    Message {
        id: String,
        text: String,
        /// Characters of text so far, where the open text block's text starts, its
        /// citations (title, url), and the annotations made (JSON texts joined, count).
        length: u64,
        block_start: u64,
        citations: Vec<(String, String)>,
        annotations: Vec<u8>,
        annotation_count: u64,
    },
    Reasoning {
        id: String,
        blocks: Vec<Block>,
        /// Summary parts finished, and whether one is open.
        summaries: u64,
        part_open: bool,
    },
    Call {
        id: String,
        call_id: String,
        origin: ToolOrigin,
        arguments: String,
    },
    Search {
        id: String,
        /// The upstream's id, which its results block names.
        search_id: String,
        arguments: String,
        /// Its block stopped: the item waits for the results block.
        stopped: bool,
        sources: Vec<String>,
    },
}

pub struct ResponsesEncoder {
    response_id: String,
    model: String,
    created_at: u64,
    estimate: u64,
    echo: Vec<u8>,
    include_encrypted: bool,
    summary: bool,
    key: Option<Vec<u8>>,
    names: HashMap<String, ToolOrigin>,
    seq: u64,
    started: bool,
    ending: EndState,
    status: Option<&'static str>,
    /// Finished items as output_item.done sent them, joined with commas, and their count.
    items: Vec<u8>,
    count: u64,
    /// The open item, and the open block (decoder id) feeding it.
    item: Option<Item>,
    block: Option<u64>,
}

/// The members of a JSON object text (nothing for anything but an object).
fn echo_inner(echo: &str) -> Vec<u8> {
    let text = trim_json_ws(echo.as_bytes());
    if text.len() < 2 || text[0] != b'{' || text[text.len() - 1] != b'}' {
        return Vec::new();
    }
    trim_json_ws(&text[1..text.len() - 1]).to_vec()
}

/// A custom tool call's input from its tool_use arguments: the `input` string, else
/// nothing for no or empty arguments, else the arguments as they are.
fn custom_call_input(arguments: &str) -> String {
    if arguments.is_empty() {
        return String::new();
    }
    match parse(arguments) {
        Some(serde_json::Value::Object(map)) => match map.get("input") {
            Some(serde_json::Value::String(input)) => input.clone(),
            _ if map.is_empty() => String::new(),
            _ => arguments.to_owned(),
        },
        _ => arguments.to_owned(),
    }
}

/// A web search's query, from its input's `query` member ("" when it has none).
fn search_query(arguments: &str) -> String {
    match parse(arguments) {
        Some(serde_json::Value::Object(map)) => match map.get("query") {
            Some(serde_json::Value::String(query)) => query.clone(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// Note a text block's citation that carries a URL (the non-streamed mapping's
/// `url_citations`); it becomes an annotation spanning the block when the block ends.
fn add_citation(citations: &mut Vec<(String, String)>, citation: &str) {
    let Some(serde_json::Value::Object(value)) = parse(citation) else {
        return;
    };
    if let Some(url) = value
        .get("url")
        .and_then(|u| u.as_str())
        .filter(|u| !u.is_empty())
    {
        let title = value.get("title").and_then(|t| t.as_str()).unwrap_or("");
        citations.push((title.to_owned(), url.to_owned()));
    }
}

impl ResponsesEncoder {
    pub fn new(
        response_id: &str,
        model: &str,
        created_at: u64,
        input_tokens: u64,
        options: ResponsesOptions<'_>,
    ) -> Self {
        ResponsesEncoder {
            response_id: response_id.to_owned(),
            model: model.to_owned(),
            created_at,
            estimate: input_tokens,
            echo: echo_inner(options.echo),
            include_encrypted: options.include_encrypted,
            summary: options.summary,
            key: options.signing_key.map(<[u8]>::to_vec),
            names: options.tool_names,
            seq: 0,
            started: false,
            ending: EndState::default(),
            status: None,
            items: Vec::new(),
            count: 0,
            item: None,
            block: None,
        }
    }

    fn next(&mut self) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        seq
    }

    fn response(&self, status: &str, tail: &ResponseTail<'_>) -> Vec<u8> {
        let mut response = Vec::with_capacity(256 + self.echo.len() + self.items.len());
        out::response_object(
            &mut response,
            &self.response_id,
            self.created_at,
            status,
            &self.model,
            &self.items,
            &self.echo,
            tail,
        );
        response
    }

    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.started = true;
            let tail = ResponseTail {
                error: None,
                incomplete_reason: None,
                usage: None,
            };
            let response = self.response("in_progress", &tail);
            let seq = self.next();
            out::response_event(out, "response.created", seq, &response);
            let seq = self.next();
            out::response_event(out, "response.in_progress", seq, &response);
        }
    }

    fn open(&mut self, out: &mut Vec<u8>, item: Item, added: &[u8]) {
        self.item = Some(item);
        let seq = self.next();
        out::item_event(out, "response.output_item.added", seq, self.count, added);
    }

    /// A block starts: it feeds the open item, or the open item finishes and the block's
    /// kind opens the next.
    fn block_start(&mut self, out: &mut Vec<u8>, block: u64, kind: BlockKind<'_>) {
        if self.block.is_some()
            && !matches!(
                kind,
                BlockKind::ServerTool { .. } | BlockKind::WebSearchResults { .. }
            )
        {
            self.block_stop(out); // a lenient upstream's overlapping blocks
        }
        match kind {
            BlockKind::Text => self.start_text(out),
            BlockKind::Thinking => self.start_thinking(
                out,
                Block::Thinking {
                    text: String::new(),
                    signature: String::new(),
                },
            ),
            BlockKind::RedactedThinking { data } => self.start_thinking(
                out,
                Block::Redacted {
                    data: data.to_owned(),
                },
            ),
            BlockKind::ToolUse { id, name } => self.open_call(out, id, name),
            BlockKind::WebSearch { id } => self.open_search(out, id),
            BlockKind::WebSearchResults { search_id } => {
                if !self.search_takes_results(out, search_id) {
                    return;
                }
            }
            BlockKind::ServerTool { .. } => return,
        }
        self.block = Some(block);
    }

    /// A text block: the open message item goes on (its annotations start here), else a
    /// message item opens with its one output_text part.
    fn start_text(&mut self, out: &mut Vec<u8>) {
        if let Some(Item::Message {
            length,
            block_start,
            ..
        }) = &mut self.item
        {
            *block_start = *length;
            return;
        }
        self.close(out, false);
        let id = item_id("msg", &self.response_id, self.count);
        let mut added = Vec::new();
        out::message_item(&mut added, &id, "in_progress", None, b"");
        let part_id = id.clone();
        let message = Item::Message {
            id,
            text: String::new(),
            length: 0,
            block_start: 0,
            citations: Vec::new(),
            annotations: Vec::new(),
            annotation_count: 0,
        };
        self.open(out, message, &added);
        let seq = self.next();
        let kind = "response.content_part.added";
        out::content_part(out, kind, seq, &part_id, self.count, "", b"");
    }

    /// A thinking or redacted thinking block joins the open reasoning item, else opens one.
    fn start_thinking(&mut self, out: &mut Vec<u8>, block: Block) {
        if !matches!(self.item, Some(Item::Reasoning { .. })) {
            self.close(out, false);
            let id = item_id("rs", &self.response_id, self.count);
            let mut added = Vec::new();
            out::reasoning_item_added(&mut added, &id);
            let reasoning = Item::Reasoning {
                id,
                blocks: Vec::new(),
                summaries: 0,
                part_open: false,
            };
            self.open(out, reasoning, &added);
        }
        if let Some(Item::Reasoning { blocks, .. }) = &mut self.item {
            blocks.push(block);
        }
    }

    /// A tool_use block is a function_call item, or a custom_tool_call item for a custom
    /// tool, named as the client named it.
    fn open_call(&mut self, out: &mut Vec<u8>, call_id: &str, name: &str) {
        self.close(out, false);
        let origin = self.names.get(name).cloned().unwrap_or_else(|| ToolOrigin {
            name: name.to_owned(),
            namespace: None,
            custom: false,
        });
        let prefix = if origin.custom { "ctc" } else { "fc" };
        let id = item_id(prefix, &self.response_id, self.count);
        let mut added = Vec::new();
        let namespace = origin.namespace.as_deref();
        let (custom, status) = (origin.custom, "in_progress");
        out::call_item(
            &mut added,
            custom,
            &id,
            status,
            "",
            call_id,
            &origin.name,
            namespace,
        );
        let call = Item::Call {
            id,
            call_id: call_id.to_owned(),
            origin,
            arguments: String::new(),
        };
        self.open(out, call, &added);
    }

    /// A web search block is a web_search_call item, searching from the start.
    fn open_search(&mut self, out: &mut Vec<u8>, search_id: &str) {
        self.close(out, false);
        let id = item_id("ws", &self.response_id, self.count);
        let mut added = Vec::new();
        out::web_search_item(&mut added, &id, "in_progress", None, &[]);
        let progress_id = id.clone();
        let search = Item::Search {
            id,
            search_id: search_id.to_owned(),
            arguments: String::new(),
            stopped: false,
            sources: Vec::new(),
        };
        self.open(out, search, &added);
        for progress in [
            "response.web_search_call.in_progress",
            "response.web_search_call.searching",
        ] {
            let seq = self.next();
            out::web_search_event(out, progress, seq, &progress_id, self.count);
        }
    }

    /// A results block feeds the search it names when that search is open and its own block
    /// stopped; the results of another search finish the open one (it has none).
    fn search_takes_results(&mut self, out: &mut Vec<u8>, search_id: &str) -> bool {
        let Some(Item::Search {
            search_id: mine,
            stopped: true,
            ..
        }) = &self.item
        else {
            return false;
        };
        if mine != search_id {
            self.close(out, false);
            return false;
        }
        true
    }

    fn text_delta(&mut self, out: &mut Vec<u8>, text: &str) {
        let index = self.count;
        let seq = self.seq;
        if let Some(Item::Message {
            id,
            text: all,
            length,
            ..
        }) = &mut self.item
        {
            all.push_str(text);
            *length += text.chars().count() as u64;
            out::output_text(
                out,
                "response.output_text.delta",
                "delta",
                seq,
                id,
                index,
                text,
            );
            self.seq += 1;
        }
    }

    fn thinking_delta(&mut self, out: &mut Vec<u8>, thinking: &str) {
        let summary = self.summary;
        let index = self.count;
        let mut seq = self.seq;
        if let Some(Item::Reasoning {
            id,
            blocks,
            summaries,
            part_open,
        }) = &mut self.item
        {
            if let Some(Block::Thinking { text, .. }) = blocks.last_mut() {
                text.push_str(thinking);
            }
            if !summary {
                return;
            }
            if !*part_open {
                *part_open = true;
                out::summary_part(
                    out,
                    "response.reasoning_summary_part.added",
                    seq,
                    id,
                    index,
                    *summaries,
                    "",
                );
                seq += 1;
            }
            out::summary_text(
                out,
                "response.reasoning_summary_text.delta",
                "delta",
                seq,
                id,
                index,
                *summaries,
                thinking,
            );
            seq += 1;
        }
        self.seq = seq;
    }

    fn signature_delta(&mut self, signature: &str) {
        if let Some(Item::Reasoning { blocks, .. }) = &mut self.item {
            if let Some(Block::Thinking {
                signature: mine, ..
            }) = blocks.last_mut()
            {
                signature.clone_into(mine);
            }
        }
    }

    /// A search's input is kept for its query; a function call's arguments go as they
    /// come, a custom tool's input whole at the end.
    fn arguments_delta(&mut self, out: &mut Vec<u8>, partial_json: &str) {
        let index = self.count;
        let seq = self.seq;
        match &mut self.item {
            Some(Item::Search { arguments, .. }) => arguments.push_str(partial_json),
            Some(Item::Call {
                id,
                origin,
                arguments,
                ..
            }) => {
                arguments.push_str(partial_json);
                if !origin.custom {
                    let kind = "response.function_call_arguments.delta";
                    out::call_input(out, kind, "delta", seq, id, index, partial_json);
                    self.seq += 1;
                }
            }
            _ => {}
        }
    }

    fn block_stop(&mut self, out: &mut Vec<u8>) {
        self.block = None;
        match &mut self.item {
            Some(Item::Reasoning {
                part_open: true, ..
            }) => self.summary_done(out),
            Some(Item::Search { stopped, .. }) if !*stopped => {
                *stopped = true; // done with its results, or when the next block starts
            }
            // A call is one block, a search's results a second.
            Some(Item::Call { .. } | Item::Search { .. }) => self.close(out, false),
            Some(Item::Message { .. }) => self.annotate(out),
            _ => {}
        }
    }

    /// A thinking block's summary part is done.
    fn summary_done(&mut self, out: &mut Vec<u8>) {
        let index = self.count;
        let seq = self.seq;
        let Some(Item::Reasoning {
            id,
            blocks,
            summaries,
            part_open,
        }) = &mut self.item
        else {
            return;
        };
        let text = match blocks.last() {
            Some(Block::Thinking { text, .. }) => text.as_str(),
            _ => "",
        };
        let kind = "response.reasoning_summary_text.done";
        out::summary_text(out, kind, "text", seq, id, index, *summaries, text);
        let kind = "response.reasoning_summary_part.done";
        out::summary_part(out, kind, seq + 1, id, index, *summaries, text);
        *part_open = false;
        *summaries += 1;
        self.seq = seq + 2;
    }

    /// A text block's citations become annotations spanning the block.
    fn annotate(&mut self, out: &mut Vec<u8>) {
        let Some(Item::Message {
            id,
            length,
            block_start,
            citations,
            annotations,
            annotation_count,
            ..
        }) = &mut self.item
        else {
            return;
        };
        for (title, url) in citations.drain(..) {
            let mut annotation = Vec::new();
            out::url_citation(&mut annotation, *block_start, *length, &title, &url);
            let index = *annotation_count;
            out::annotation_added(out, self.seq, id, self.count, index, &annotation);
            self.seq += 1;
            if *annotation_count > 0 {
                annotations.push(b',');
            }
            annotations.extend_from_slice(&annotation);
            *annotation_count += 1;
        }
    }

    /// Finish the open item: its done events, and it joins the output.
    fn close(&mut self, out: &mut Vec<u8>, incomplete: bool) {
        let Some(item) = self.item.take() else {
            return;
        };
        self.block = None;
        let index = self.count;
        let done = match item {
            Item::Message {
                id,
                text,
                annotations,
                ..
            } => self.message_done(out, &id, &text, &annotations, incomplete),
            Item::Reasoning { id, blocks, .. } => self.reasoning_done(&id, &blocks),
            Item::Search {
                id,
                arguments,
                sources,
                ..
            } => self.search_done(out, &id, &arguments, &sources),
            Item::Call {
                id,
                call_id,
                origin,
                arguments,
            } => self.call_done(out, &id, &call_id, &origin, arguments),
        };
        let seq = self.next();
        out::item_event(out, "response.output_item.done", seq, index, &done);
        if self.count > 0 {
            self.items.push(b',');
        }
        self.items.extend_from_slice(&done);
        self.count += 1;
    }

    /// A message item's text and part are done; the item as it ends.
    fn message_done(
        &mut self,
        out: &mut Vec<u8>,
        id: &str,
        text: &str,
        annotations: &[u8],
        incomplete: bool,
    ) -> Vec<u8> {
        let index = self.count;
        let seq = self.next();
        out::output_text(
            out,
            "response.output_text.done",
            "text",
            seq,
            id,
            index,
            text,
        );
        let seq = self.next();
        let kind = "response.content_part.done";
        out::content_part(out, kind, seq, id, index, text, annotations);
        let status = if incomplete {
            "incomplete"
        } else {
            "completed"
        };
        let mut done = Vec::new();
        out::message_item(&mut done, id, status, Some(text), annotations);
        done
    }

    /// A reasoning item as it ends: its summaries, and the client carrier of its blocks.
    fn reasoning_done(&self, id: &str, blocks: &[Block]) -> Vec<u8> {
        let summaries = blocks.iter().filter_map(|block| match block {
            Block::Thinking { text, .. } if self.summary && !text.is_empty() => Some(text.as_str()),
            _ => None,
        });
        let encrypted = match &self.key {
            Some(key) if self.include_encrypted && !key.is_empty() => {
                Some(encode_carrier(blocks, key))
            }
            _ => None,
        };
        let mut done = Vec::new();
        out::reasoning_item(&mut done, id, summaries, encrypted.as_deref());
        done
    }

    /// A web search is completed: the item with its query and the sources found.
    fn search_done(
        &mut self,
        out: &mut Vec<u8>,
        id: &str,
        arguments: &str,
        sources: &[String],
    ) -> Vec<u8> {
        let seq = self.next();
        out::web_search_event(
            out,
            "response.web_search_call.completed",
            seq,
            id,
            self.count,
        );
        let mut done = Vec::new();
        let query = search_query(arguments);
        out::web_search_item(&mut done, id, "completed", Some(&query), sources);
        done
    }

    /// A call's input is done: a custom tool's input whole (one delta, nothing for none),
    /// a function call's arguments as they went ("{}" for a call without arguments).
    fn call_done(
        &mut self,
        out: &mut Vec<u8>,
        id: &str,
        call_id: &str,
        origin: &ToolOrigin,
        arguments: String,
    ) -> Vec<u8> {
        let index = self.count;
        let (kinds, field, text, delta) = if origin.custom {
            let text = custom_call_input(&arguments);
            let delta = !text.is_empty();
            (CUSTOM_INPUT, "input", text, delta)
        } else if arguments.is_empty() {
            (FUNCTION_ARGUMENTS, "arguments", "{}".to_owned(), true)
        } else {
            (FUNCTION_ARGUMENTS, "arguments", arguments, false)
        };
        let (delta_kind, done_kind) = kinds;
        if delta {
            let seq = self.next();
            out::call_input(out, delta_kind, "delta", seq, id, index, &text);
        }
        let seq = self.next();
        out::call_input(out, done_kind, field, seq, id, index, &text);
        let mut done = Vec::new();
        let (custom, namespace) = (origin.custom, origin.namespace.as_deref());
        out::call_item(
            &mut done,
            custom,
            id,
            "completed",
            &text,
            call_id,
            &origin.name,
            namespace,
        );
        done
    }

    fn usage_parts(&self) -> (u128, u64, u64, u64) {
        let usage = &self.ending.usage;
        let (input, cached, output) = usage.prompt_counts(self.estimate);
        let written = usage.cache_creation_input_tokens.unwrap_or(0);
        (input, cached, written, output)
    }

    fn is_thinking(&self) -> bool {
        matches!(&self.item, Some(Item::Reasoning { blocks, .. })
            if matches!(blocks.last(), Some(Block::Thinking { .. })))
    }
}

impl Ending for ResponsesEncoder {
    fn ending_mut(&mut self) -> &mut EndState {
        &mut self.ending
    }

    fn end(&mut self, out: &mut Vec<u8>) {
        let incomplete = incomplete_reason(self.ending.stop_reason.as_deref());
        self.close(out, incomplete.is_some());
        let tail = ResponseTail {
            error: None,
            incomplete_reason: incomplete,
            usage: Some(self.usage_parts()),
        };
        let (kind, status) = match incomplete {
            None => ("response.completed", "completed"),
            Some(_) => ("response.incomplete", "incomplete"),
        };
        let response = self.response(status, &tail);
        let seq = self.next();
        out::response_event(out, kind, seq, &response);
        self.status = Some(incomplete.unwrap_or("completed"));
        self.ending.outcome = Outcome::Complete;
    }

    fn fail(&mut self, out: &mut Vec<u8>, error_type: &'static str, message: &str) {
        let tail = ResponseTail {
            error: Some((response_error_code(error_type), message)),
            incomplete_reason: None,
            usage: None,
        };
        let response = self.response("failed", &tail);
        let seq = self.next();
        out::response_event(out, "response.failed", seq, &response);
        self.ending.outcome = Outcome::Failed(error_type, message.to_owned());
    }
}

impl Encoder for ResponsesEncoder {
    type Usage = (u128, u64, u64);

    #[inline(always)]
    fn event(&mut self, out: &mut Vec<u8>, event: Event<'_>) {
        self.ensure_started(out);
        match event {
            Event::TextDelta { block, text } => {
                if self.block == Some(block) {
                    self.text_delta(out, text);
                }
            }
            Event::ThinkingDelta { block, thinking } => {
                if self.block == Some(block) && self.is_thinking() {
                    self.thinking_delta(out, thinking);
                }
            }
            Event::SignatureDelta { block, signature } => {
                if self.block == Some(block) && self.is_thinking() {
                    self.signature_delta(signature);
                }
            }
            Event::ToolArgumentsDelta {
                block,
                partial_json,
            } => {
                if self.block == Some(block) {
                    self.arguments_delta(out, partial_json);
                }
            }
            Event::CitationDelta { block, citation } => {
                if self.block == Some(block) {
                    if let Some(Item::Message { citations, .. }) = &mut self.item {
                        add_citation(citations, citation);
                    }
                }
            }
            Event::SearchResult { block, url, .. } => {
                if self.block == Some(block) {
                    if let Some(Item::Search {
                        stopped: true,
                        sources,
                        ..
                    }) = &mut self.item
                    {
                        sources.push(url.to_owned());
                    }
                }
            }
            Event::MessageStart { .. } => {}
            Event::BlockStart { block, kind } => self.block_start(out, block, kind),
            Event::BlockStop { block } => {
                if self.block == Some(block) {
                    self.block_stop(out);
                }
            }
            Event::Ping => out.extend_from_slice(out::PING),
            event => self.message_event(out, event),
        }
    }

    fn end_state(&self) -> &EndState {
        &self.ending
    }

    fn has_content(&self) -> bool {
        self.count > 0 || self.item.is_some()
    }

    fn stop_reason(&self) -> Option<&str> {
        self.status
    }

    fn usage(&self) -> (u128, u64, u64) {
        let (input, cached, _, output) = self.usage_parts();
        (input, cached, output)
    }
}
