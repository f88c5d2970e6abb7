//! Serving the Anthropic Messages API from an OpenAI Chat Completions upstream: the
//! response stream translation (request translation is Python's job).

mod chunk;
pub mod mapping;
mod output;
mod stream;

pub use stream::{MessagesViaChatStream, DEFAULT_MAX_EVENT_BYTES};
