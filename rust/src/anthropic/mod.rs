//! Anthropic Messages: its stream decoder (upstream) and encoder (client).

pub mod decoder;
pub mod encoder;
mod event;
mod output;

pub use decoder::AnthropicDecoder;
pub use encoder::AnthropicEncoder;
