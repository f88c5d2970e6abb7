//! The OpenAI Responses API: its stream decoder (upstream) and encoder (client) and, in Python, the request
//! reader/writer and non-streamed mapping (python/hydra_proxy/responses/).

mod chunk;
pub mod decoder;
pub mod encoder;
pub mod errors;
pub mod items;
mod output;
pub mod reasoning;
mod tools;

pub use decoder::ResponsesDecoder;
pub use encoder::{ResponsesEncoder, ResponsesOptions, ToolOrigin};
