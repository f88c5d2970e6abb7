//! Error messages every decoder uses (twin of python/hydra_proxy/stream/messages.py);
//! protocol-specific ones live in their decoder.

pub const MSG_INVALID_JSON: &str = "the upstream sent an event that is not valid JSON";
pub const MSG_BAD_SHAPE: &str = "the upstream sent an event of an unexpected shape";
pub const MSG_CUT_OFF: &str = "the upstream stream ended before the response was complete";
