//! The transducers the server runs, each a decoder composed with an encoder (twin of the
//! compositions in python/hydra_proxy/transducers.py).

use crate::anthropic::{AnthropicDecoder, AnthropicEncoder};
use crate::chat::{ChatDecoder, ChatEncoder};
use crate::responses::{ResponsesDecoder, ResponsesEncoder, ResponsesOptions};
use crate::stream::Transducer;

/// Anthropic Messages clients on an OpenAI Chat Completions upstream.
pub type MessagesViaChatStream = Transducer<ChatDecoder, AnthropicEncoder>;

/// OpenAI Chat Completions clients on an Anthropic Messages upstream.
pub type ChatViaMessagesStream = Transducer<AnthropicDecoder, ChatEncoder>;

pub fn messages_via_chat(
    message_id: &str,
    model: &str,
    input_tokens: u64,
    signing_key: Option<&[u8]>,
    max_event_bytes: usize,
) -> MessagesViaChatStream {
    Transducer::new(
        ChatDecoder::new(message_id, signing_key),
        AnthropicEncoder::new(message_id, model, input_tokens),
        max_event_bytes,
    )
}

pub fn chat_via_messages(
    completion_id: &str,
    model: &str,
    created: u64,
    include_usage: bool,
    continuation_key: Option<&[u8]>,
    max_event_bytes: usize,
) -> ChatViaMessagesStream {
    Transducer::new(
        AnthropicDecoder::new(),
        ChatEncoder::new(
            completion_id,
            model,
            created,
            include_usage,
            continuation_key,
        ),
        max_event_bytes,
    )
}

// -- Gemini upstream (streamGenerateContent?alt=sse) ---------------------------------------

use crate::gemini::GeminiDecoder;

/// Anthropic Messages clients on a Gemini upstream.
pub type MessagesViaGeminiStream = Transducer<GeminiDecoder, AnthropicEncoder>;

/// OpenAI Chat Completions clients on a Gemini upstream.
pub type ChatViaGeminiStream = Transducer<GeminiDecoder, ChatEncoder>;

pub fn messages_via_gemini(
    message_id: &str,
    model: &str,
    input_tokens: u64,
    signing_key: Option<&[u8]>,
    max_event_bytes: usize,
) -> MessagesViaGeminiStream {
    Transducer::new(
        GeminiDecoder::new(message_id, signing_key),
        AnthropicEncoder::new(message_id, model, input_tokens),
        max_event_bytes,
    )
}

/// `message_id` names the tool calls; `signing_key` signs thinking and carries thought
/// signatures, `continuation_key` the Chat continuation suffix that brings them back.
#[allow(clippy::too_many_arguments)]
pub fn chat_via_gemini(
    completion_id: &str,
    model: &str,
    created: u64,
    message_id: &str,
    include_usage: bool,
    signing_key: Option<&[u8]>,
    continuation_key: Option<&[u8]>,
    max_event_bytes: usize,
) -> ChatViaGeminiStream {
    Transducer::new(
        GeminiDecoder::new(message_id, signing_key),
        ChatEncoder::new(
            completion_id,
            model,
            created,
            include_usage,
            continuation_key,
        ),
        max_event_bytes,
    )
}

// -- OpenAI Responses clients (issue 10) ----------------------------------------------------

/// OpenAI Responses clients (Codex CLI) on an OpenAI Chat Completions upstream.
pub type ResponsesViaChatStream = Transducer<ChatDecoder, ResponsesEncoder>;

/// OpenAI Responses clients (Codex CLI) on an Anthropic Messages upstream.
pub type ResponsesViaMessagesStream = Transducer<AnthropicDecoder, ResponsesEncoder>;

pub fn responses_via_chat(
    response_id: &str,
    model: &str,
    created_at: u64,
    input_tokens: u64,
    options: ResponsesOptions<'_>,
    max_event_bytes: usize,
) -> ResponsesViaChatStream {
    Transducer::new(
        ChatDecoder::new(response_id, options.signing_key),
        ResponsesEncoder::new(response_id, model, created_at, input_tokens, options),
        max_event_bytes,
    )
}

pub fn responses_via_messages(
    response_id: &str,
    model: &str,
    created_at: u64,
    input_tokens: u64,
    options: ResponsesOptions<'_>,
    max_event_bytes: usize,
) -> ResponsesViaMessagesStream {
    Transducer::new(
        AnthropicDecoder::new(),
        ResponsesEncoder::new(response_id, model, created_at, input_tokens, options),
        max_event_bytes,
    )
}

// -- OpenAI Responses upstreams (the `responses` provider kind, issue 10) -------------------

/// Anthropic Messages clients on an OpenAI Responses upstream.
pub type MessagesViaResponsesStream = Transducer<ResponsesDecoder, AnthropicEncoder>;

/// OpenAI Chat Completions clients on an OpenAI Responses upstream.
pub type ChatViaResponsesStream = Transducer<ResponsesDecoder, ChatEncoder>;

pub fn messages_via_responses(
    message_id: &str,
    model: &str,
    input_tokens: u64,
    signing_key: Option<&[u8]>,
    max_event_bytes: usize,
) -> MessagesViaResponsesStream {
    Transducer::new(
        ResponsesDecoder::new(message_id, signing_key),
        AnthropicEncoder::new(message_id, model, input_tokens),
        max_event_bytes,
    )
}

pub fn chat_via_responses(
    completion_id: &str,
    model: &str,
    created: u64,
    include_usage: bool,
    continuation_key: Option<&[u8]>,
    signing_key: Option<&[u8]>,
    max_event_bytes: usize,
) -> ChatViaResponsesStream {
    Transducer::new(
        ResponsesDecoder::new(completion_id, signing_key),
        ChatEncoder::new(
            completion_id,
            model,
            created,
            include_usage,
            continuation_key,
        ),
        max_event_bytes,
    )
}

// -- OpenAI Responses clients on a Gemini upstream ------------------------------------------

/// OpenAI Responses clients (Codex CLI) on a Gemini upstream.
pub type ResponsesViaGeminiStream = Transducer<GeminiDecoder, ResponsesEncoder>;

/// The response id names the tool calls; `options.signing_key` signs thinking and carries
/// Gemini's thought signatures.
pub fn responses_via_gemini(
    response_id: &str,
    model: &str,
    created_at: u64,
    input_tokens: u64,
    options: ResponsesOptions<'_>,
    max_event_bytes: usize,
) -> ResponsesViaGeminiStream {
    Transducer::new(
        GeminiDecoder::new(response_id, options.signing_key),
        ResponsesEncoder::new(response_id, model, created_at, input_tokens, options),
        max_event_bytes,
    )
}
