//! Error messages every decoder uses (twin of python/hydra_proxy/stream/messages.py);
//! protocol-specific ones live in their decoder.

pub const MSG_INVALID_JSON: &str = "the upstream sent an event that is not valid JSON";
pub const MSG_BAD_SHAPE: &str = "the upstream sent an event of an unexpected shape";
pub const MSG_CUT_OFF: &str = "the upstream stream ended before the response was complete";
/// EOF with part of an event buffered (no blank line ended it): the connection was cut.
pub const MSG_CUT_INSIDE_EVENT: &str = "the upstream stream was cut off in the middle of an event";
/// A line that is no SSE field (an HTML page, binary) in a `text/event-stream` body.
pub const MSG_NOT_EVENT_STREAM: &str = "the upstream sent bytes that are not an event stream";
/// One event's buffered bytes past the bound; `{}` is the bound.
pub const MSG_EVENT_TOO_LARGE: &str =
    "an upstream event exceeds the max_event_bytes bound of {} bytes";
