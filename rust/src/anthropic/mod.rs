//! Anthropic Messages: its stream decoder (upstream) and encoder (client).

mod chunk;
pub mod decoder;
pub mod encoder;
mod output;

pub use decoder::AnthropicDecoder;
pub use encoder::AnthropicEncoder;
