//! The OpenAI Responses API: its stream decoder (upstream) and encoder (client) and, in Python, the request
//! reader/writer and non-streamed mapping (python/hydra_proxy/responses/).

pub mod decoder;
pub mod encoder;
mod output;
pub mod shared;

pub use decoder::ResponsesDecoder;
pub use encoder::{ResponsesEncoder, ResponsesOptions, ToolOrigin};
