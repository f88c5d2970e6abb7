//! The OpenAI Responses API: its stream encoder (client) and, in Python, the request
//! reader/writer and non-streamed mapping (python/hydra_proxy/responses/).

pub mod encoder;
mod output;
pub mod shared;

pub use encoder::{ResponsesEncoder, ResponsesOptions, ToolOrigin};
