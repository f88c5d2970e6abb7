//! Serving the OpenAI Chat Completions API from an Anthropic Messages upstream: the
//! response stream translation (request translation is Python's job).

mod event;
mod output;
mod stream;

pub use stream::{ChatViaMessagesStream, DEFAULT_MAX_EVENT_BYTES};
