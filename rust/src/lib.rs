//! hydra-proxy's native core: an incremental SSE parser and the streaming transducers that
//! translate one LLM API's event stream into another's. Free of I/O; the Python server
//! feeds it upstream bytes and sends what it returns. Every transducer has a pure-Python
//! twin in python/hydra_proxy/ that produces the same bytes.

pub mod chat_via_messages;
pub mod continuation;
pub mod errors;
pub mod json;
pub mod messages_via_chat;
pub mod signature;
pub mod sse;

#[cfg(feature = "python")]
mod python;
