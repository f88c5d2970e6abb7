//! A transducer is a decoder composed with an encoder (twin of
//! python/hydra_proxy/stream/transducer.py). Generic, so each pair compiles to one
//! monomorphic state machine: events are built on the stack and handed straight to the
//! encoder, with no dynamic dispatch and no allocation per event. The encoder's `event` is
//! inlined at every place a decoder emits, so the match on the event's kind folds away and
//! each emit is just the encoder's code for that event.

use super::events::{Event, Usage};
use super::messages::{MSG_BAD_SHAPE, MSG_CUT_INSIDE_EVENT, MSG_CUT_OFF, MSG_INVALID_JSON};
use crate::sse::SseParser;

/// Where a decoder's events go (Python: the `emit` callable).
pub trait Sink {
    fn emit(&mut self, event: Event<'_>);
}

/// The sink of a transducer: its encoder, writing into its output buffer.
struct EncoderSink<'a, E> {
    encoder: &'a mut E,
    out: &'a mut Vec<u8>,
}

impl<E: Encoder> Sink for EncoderSink<'_, E> {
    #[inline(always)]
    fn emit(&mut self, event: Event<'_>) {
        self.encoder.event(self.out, event);
    }
}

/// The sink at upstream EOF with an event cut in the middle: whatever the decoder makes of
/// the cut (an event it cannot read, a stream that ended early), the truth is the cut.
struct CutSink<'a, E> {
    inner: EncoderSink<'a, E>,
    cut_inside_event: bool,
}

impl<E: Encoder> Sink for CutSink<'_, E> {
    fn emit(&mut self, event: Event<'_>) {
        match event {
            Event::Error { kind, message }
                if self.cut_inside_event
                    && [MSG_INVALID_JSON, MSG_BAD_SHAPE, MSG_CUT_OFF].contains(&message) =>
            {
                self.inner.emit(Event::Error {
                    kind,
                    message: MSG_CUT_INSIDE_EVENT,
                });
            }
            event => self.inner.emit(event),
        }
    }
}

/// Upstream protocol -> canonical events.
pub trait Decoder {
    /// Called before the bytes of every `feed` and `finish` (a protocol without a start
    /// event begins the message here).
    fn begin<S: Sink>(&mut self, _emit: &mut S) {}

    /// One upstream SSE event (`event:` name and `data:` payload).
    fn event<S: Sink>(&mut self, event: Option<&[u8]>, data: &[u8], emit: &mut S);

    /// Upstream EOF after its last event: end the message, or say it was cut off.
    fn finish<S: Sink>(&mut self, emit: &mut S);
}

/// How a client's output has ended, which every encoder keeps (Python: `Ending`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It has not.
    #[default]
    Open,
    /// With the client protocol's end: the reply is whole.
    Complete,
    /// With an error event: (Anthropic error type, message).
    Failed(&'static str, String),
}

/// What every encoder keeps of how its message ends: the upstream's latest token counts
/// and stop reason, and how the client's output has ended.
#[derive(Debug, Default)]
pub struct EndState {
    pub usage: Usage,
    pub stop_reason: Option<String>,
    pub outcome: Outcome,
}

impl EndState {
    /// Take a `Usage` or `StopReason` event (any other says nothing of the end).
    #[inline(always)]
    pub fn note(&mut self, event: Event<'_>) {
        match event {
            Event::Usage(usage) => self.usage.update(&usage),
            Event::StopReason { reason } => self.stop_reason = Some(reason.to_owned()),
            _ => {}
        }
    }
}

/// `Decoder::begin` of a protocol without a start event: the message begins at the first
/// body bytes.
#[inline]
pub fn start_once<S: Sink>(started: &mut bool, emit: &mut S) {
    if !*started {
        *started = true;
        emit.emit(Event::MessageStart {
            id: None,
            model: None,
        });
    }
}

/// An encoder's handling of `Usage`, `StopReason`, `MessageStop` and `Error`; its own match
/// hands these here (Python: `Ending._message_event`), the counts and stop reason
/// noted, the end and an error written in the client protocol's form.
pub trait Ending {
    fn ending_mut(&mut self) -> &mut EndState;
    /// Write the client protocol's end and mark the output complete.
    fn end(&mut self, out: &mut Vec<u8>);
    /// Write the client protocol's error event and mark the output failed.
    fn fail(&mut self, out: &mut Vec<u8>, error_type: &'static str, message: &str);

    /// Any other event says nothing of the end and is dropped.
    #[inline(always)]
    fn message_event(&mut self, out: &mut Vec<u8>, event: Event<'_>) {
        match event {
            Event::Usage(_) | Event::StopReason { .. } => self.ending_mut().note(event),
            Event::MessageStop => self.end(out),
            Event::Error { kind, message } => self.fail(out, kind, message),
            _ => {}
        }
    }
}

/// Canonical events -> client protocol SSE bytes, and what the server asks of the stream.
pub trait Encoder {
    /// The client protocol's token counts.
    type Usage;

    fn event(&mut self, out: &mut Vec<u8>, event: Event<'_>);
    fn end_state(&self) -> &EndState;
    fn outcome(&self) -> &Outcome {
        &self.end_state().outcome
    }
    /// The output has ended (complete or with an error).
    fn finished(&self) -> bool {
        *self.outcome() != Outcome::Open
    }
    /// The output ended with the client protocol's end: the reply is whole.
    fn complete(&self) -> bool {
        *self.outcome() == Outcome::Complete
    }
    fn error(&self) -> Option<(&'static str, &str)> {
        match self.outcome() {
            Outcome::Failed(kind, message) => Some((kind, message)),
            _ => None,
        }
    }
    /// The client has been sent a response (not only keepalives or an error).
    fn has_content(&self) -> bool;
    /// The client protocol's stop reason, once the stream has ended cleanly.
    fn stop_reason(&self) -> Option<&str>;
    fn usage(&self) -> Self::Usage;
    /// The part of the output the upstream said was reasoning (0: it did not say).
    fn reasoning_tokens(&self) -> u64 {
        self.end_state().usage.reasoning_tokens.unwrap_or(0)
    }
}

pub struct Transducer<D, E> {
    parser: SseParser,
    decoder: D,
    encoder: E,
    out: Vec<u8>,
}

impl<D: Decoder, E: Encoder> Transducer<D, E> {
    pub fn new(decoder: D, encoder: E, max_event_bytes: usize) -> Self {
        Transducer {
            parser: SseParser::new(max_event_bytes),
            decoder,
            encoder,
            out: Vec::new(),
        }
    }

    /// Translate any slice of the upstream body; returns the complete events it produced.
    pub fn feed(&mut self, chunk: &[u8]) -> &[u8] {
        self.out.clear();
        if self.encoder.finished() {
            return &self.out;
        }
        {
            let decoder = &mut self.decoder;
            let mut sink = EncoderSink {
                encoder: &mut self.encoder,
                out: &mut self.out,
            };
            decoder.begin(&mut sink);
            self.parser
                .feed(chunk, |event, data| decoder.event(event, data, &mut sink));
        }
        self.parser_error();
        &self.out
    }

    /// Upstream EOF: the closing events, or an error event if the stream was cut short.
    pub fn finish(&mut self) -> &[u8] {
        self.out.clear();
        if self.encoder.finished() {
            return &self.out;
        }
        let cut_inside_event = self.parser.in_event();
        {
            let decoder = &mut self.decoder;
            let mut sink = CutSink {
                inner: EncoderSink {
                    encoder: &mut self.encoder,
                    out: &mut self.out,
                },
                cut_inside_event,
            };
            decoder.begin(&mut sink);
            self.parser
                .finish(|event, data| decoder.event(event, data, &mut sink));
        }
        self.parser_error();
        if !self.encoder.finished() {
            let mut sink = CutSink {
                inner: EncoderSink {
                    encoder: &mut self.encoder,
                    out: &mut self.out,
                },
                cut_inside_event,
            };
            self.decoder.finish(&mut sink);
        }
        &self.out
    }

    /// The bytes the SSE parser holds for the event being read (bounded by
    /// `max_event_bytes` between calls).
    pub fn buffered_bytes(&self) -> usize {
        self.parser.buffered_bytes()
    }

    /// A keepalive for a silent upstream (nothing once the stream has ended).
    pub fn ping(&mut self) -> &[u8] {
        self.out.clear();
        if !self.encoder.finished() {
            self.encoder.event(&mut self.out, Event::Ping);
        }
        &self.out
    }

    /// End the stream with an error event (e.g. the upstream connection broke).
    pub fn fail(&mut self, error_type: &'static str, message: &str) -> &[u8] {
        self.out.clear();
        if !self.encoder.finished() {
            let error = Event::Error {
                kind: error_type,
                message,
            };
            self.encoder.event(&mut self.out, error);
        }
        &self.out
    }

    fn parser_error(&mut self) {
        if !self.encoder.finished() {
            if let Some(message) = self.parser.error() {
                let error = Event::Error {
                    kind: "api_error",
                    message,
                };
                self.encoder.event(&mut self.out, error);
            }
        }
    }

    pub fn finished(&self) -> bool {
        self.encoder.finished()
    }

    pub fn complete(&self) -> bool {
        self.encoder.complete()
    }

    pub fn error(&self) -> Option<(&'static str, &str)> {
        self.encoder.error()
    }

    pub fn has_content(&self) -> bool {
        self.encoder.has_content()
    }

    pub fn stop_reason(&self) -> Option<&str> {
        self.encoder.stop_reason()
    }

    pub fn usage(&self) -> E::Usage {
        self.encoder.usage()
    }

    pub fn reasoning_tokens(&self) -> u64 {
        self.encoder.reasoning_tokens()
    }
}
