//! Google Gemini (`streamGenerateContent?alt=sse`) as an upstream, its stream decoder, and
//! as a client protocol, its stream encoder (twins of python/hydra_proxy/gemini/, whose
//! request writer and non-streamed reader share `mapping` with the decoder).

mod chunk;
pub mod decoder;
pub mod encoder;
mod errors;
pub mod mapping;
pub mod output;

pub use decoder::GeminiDecoder;
pub use encoder::GeminiEncoder;
