//! The canonical stream: one event model between every upstream protocol and every client
//! protocol (twin of python/hydra_proxy/stream/). A [`Decoder`] turns one upstream
//! protocol's SSE events into [`Event`]s, an [`Encoder`] turns events into one client
//! protocol's SSE bytes, and a [`Transducer`] composes the two around the SSE parser.

pub mod events;
pub mod messages;
mod transducer;

pub use events::{BlockKind, Event, Usage};
pub use transducer::{start_once, Decoder, Encoder, EndState, Ending, Outcome, Sink, Transducer};

/// The largest upstream SSE event (or line) a transducer accepts by default.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
