//! The canonical stream events (twin of python/hydra_proxy/stream/events.py).
//!
//! The model is the Anthropic Messages stream's, the superset the protocols need: a message
//! is a sequence of content blocks, each started, filled by deltas and stopped, then a stop
//! reason and the end. Decoders guarantee the grammar encoders rely on:
//!
//! - `MessageStart` comes before any block (an encoder may also start on its own);
//! - every delta names a block that is started and not yet stopped, with a delta kind that
//!   fits the block (text to text, thinking and signature to thinking, arguments to tools);
//! - deltas are never empty (an empty fragment carries nothing and is not sent);
//! - every started block is stopped before `MessageStop`;
//! - `MessageStop` or `Error` is the last event.
//!
//! Block ids are the decoder's: unique among open blocks, not necessarily dense; an encoder
//! numbers blocks its own way (Anthropic indices, Chat tool-call indices). Strings borrow
//! from the upstream event being decoded, so events cost no allocation.

/// Token counts as Anthropic reports them (input excludes cached tokens). Each field is
/// the latest cumulative value; `None` leaves what an earlier `Usage` said.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// The part of `output_tokens` spent reasoning, when the upstream says (a breakdown,
    /// never added to the output again).
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// Take what a later `Usage` says: the counts are cumulative, so a later event repeats
    /// or updates them, and a field it leaves out keeps its value.
    #[inline]
    pub fn update(&mut self, later: &Usage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.reasoning_tokens = later.reasoning_tokens.or(self.reasoning_tokens);
    }
}

/// What a started block holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind<'a> {
    /// Answer text (Chat `content` / `refusal`, Anthropic `text`); citations may follow.
    Text,
    /// Reasoning the client may see (Chat `reasoning_content`, Anthropic `thinking`). Its
    /// replay state, what must be sent back for the model to continue it, arrives as
    /// `SignatureDelta` (Anthropic's signature, the proxy's `hydra1.` signature; later
    /// Gemini thought signatures and Responses encrypted reasoning).
    Thinking,
    /// Reasoning the client may not see, only replay (Anthropic `redacted_thinking`).
    RedactedThinking { data: &'a str },
    /// A call of a client tool; its input arrives as `ToolArgumentsDelta` JSON fragments.
    ToolUse { id: &'a str, name: &'a str },
    /// A block run by the provider (Anthropic `server_tool_use`, `web_search_tool_result`,
    /// ...): `kind` is its type. Clients without a form for it skip it.
    ServerTool { kind: &'a str },
    /// A web search the provider ran (Anthropic `server_tool_use` web_search, a Responses
    /// `web_search_call`): `id` is the upstream's; its input (`{"query": ...}`) arrives as
    /// `ToolArgumentsDelta` JSON fragments.
    WebSearch { id: &'a str },
    /// What the search `search_id` found (Anthropic `web_search_tool_result`, a Responses
    /// search's sources): one `SearchResult` per page, then the stop.
    WebSearchResults { search_id: &'a str },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// The message begins; `id` and `model` are the upstream's, when it says (encoders
    /// use the proxy's own). Produced by every decoder; the Chat decoder at the first body
    /// bytes, as Chat has no start event.
    MessageStart {
        id: Option<&'a str>,
        model: Option<&'a str>,
    },
    BlockStart {
        block: u64,
        kind: BlockKind<'a>,
    },
    TextDelta {
        block: u64,
        text: &'a str,
    },
    ThinkingDelta {
        block: u64,
        thinking: &'a str,
    },
    /// The thinking block's replay state (replaces any earlier one).
    SignatureDelta {
        block: u64,
        signature: &'a str,
    },
    ToolArgumentsDelta {
        block: u64,
        partial_json: &'a str,
    },
    /// One citation of a text block, as the upstream's JSON text.
    CitationDelta {
        block: u64,
        citation: &'a str,
    },
    /// One page a web search found, in a `WebSearchResults` block (a title may be empty:
    /// a Responses source has only its URL).
    SearchResult {
        block: u64,
        url: &'a str,
        title: &'a str,
    },
    BlockStop {
        block: u64,
    },
    Usage(Usage),
    /// Why the message ended, as an Anthropic stop_reason.
    StopReason {
        reason: &'a str,
    },
    /// The message is complete.
    MessageStop,
    /// The stream ends with an error (Anthropic error type, message): an upstream error,
    /// a malformed or cut-off upstream stream, or the server's own (timeouts).
    Error {
        kind: &'static str,
        message: &'a str,
    },
    /// A keepalive, from the upstream or from the server for a silent upstream.
    Ping,
}

impl Usage {
    /// (prompt, cached, output) as OpenAI and Gemini count them: their prompt counts the
    /// cached and cache-written tokens that Anthropic's input leaves out. `input_estimate`
    /// stands for the input until the upstream counts it.
    pub fn prompt_counts(&self, input_estimate: u64) -> (u128, u64, u64) {
        let cached = self.cache_read_input_tokens.unwrap_or(0);
        let prompt = u128::from(self.input_tokens.unwrap_or(input_estimate))
            + u128::from(cached)
            + u128::from(self.cache_creation_input_tokens.unwrap_or(0));
        (prompt, cached, self.output_tokens.unwrap_or(0))
    }
}
