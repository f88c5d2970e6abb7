//! Google Gemini (`streamGenerateContent?alt=sse`) as an upstream: its stream decoder (twin
//! of python/hydra_proxy/gemini/, whose request writer and non-streamed reader share
//! `mapping` with it).

mod chunk;
pub mod decoder;
pub mod mapping;

pub use decoder::GeminiDecoder;
