//! OpenAI Chat Completions: its stream decoder (upstream) and encoder (client).

mod chunk;
pub mod decoder;
pub mod encoder;
pub mod mapping;
mod output;

pub use decoder::ChatDecoder;
pub use encoder::ChatEncoder;
