//! hydra-proxy's native core: an incremental SSE parser and the streaming transducers that
//! translate one LLM API's event stream into another's. Free of I/O; the Python server
//! feeds it upstream bytes and sends what it returns. Every module has a pure-Python twin
//! in python/hydra_proxy/ that produces the same bytes (docs/ARCHITECTURE.md).
//!
//! - [`stream`]: the canonical event model and the decoder/encoder composition;
//! - one module per protocol ([`chat`], [`anthropic`], [`responses`]) with its decoder and
//!   encoder, and [`gemini`], an upstream (a decoder);
//! - [`transducers`]: the compositions the server runs.

pub mod anthropic;
pub mod chat;
pub mod continuation;
pub mod errors;
pub mod gemini;
pub mod json;
pub mod responses;
pub mod signature;
pub mod sse;
pub mod stream;
pub mod transducers;

#[cfg(feature = "python")]
mod python;

#[cfg(test)]
mod proptests;
