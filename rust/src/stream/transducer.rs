//! A transducer is a decoder composed with an encoder (twin of
//! python/hydra_proxy/stream/transducer.py). Generic, so each pair compiles to one
//! monomorphic state machine: events are built on the stack and handed straight to the
//! encoder, with no dynamic dispatch and no allocation per event.

use super::events::Event;
use crate::sse::SseParser;

/// Upstream protocol -> canonical events.
pub trait Decoder {
    /// Called before the bytes of every `feed` and `finish` (a protocol without a start
    /// event begins the message here).
    fn begin<S: FnMut(Event<'_>)>(&mut self, _emit: &mut S) {}

    /// One upstream SSE event (`event:` name and `data:` payload).
    fn event<S: FnMut(Event<'_>)>(&mut self, event: Option<&[u8]>, data: &[u8], emit: &mut S);

    /// Upstream EOF after its last event: end the message, or say it was cut off.
    fn finish<S: FnMut(Event<'_>)>(&mut self, emit: &mut S);
}

/// Canonical events -> client protocol SSE bytes, and what the server asks of the stream.
pub trait Encoder {
    /// The client protocol's token counts.
    type Usage;

    fn event(&mut self, out: &mut Vec<u8>, event: Event<'_>);
    /// The output has ended (complete or with an error).
    fn finished(&self) -> bool;
    /// The output ended with the client protocol's end: the reply is whole.
    fn complete(&self) -> bool;
    fn error(&self) -> Option<(&'static str, &str)>;
    /// The client has been sent a response (not only keepalives or an error).
    fn has_content(&self) -> bool;
    /// The client protocol's stop reason, once the stream has ended cleanly.
    fn stop_reason(&self) -> Option<&str>;
    fn usage(&self) -> Self::Usage;
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
            let (decoder, encoder, out) = (&mut self.decoder, &mut self.encoder, &mut self.out);
            let mut emit = |event: Event<'_>| encoder.event(out, event);
            decoder.begin(&mut emit);
            self.parser
                .feed(chunk, |event, data| decoder.event(event, data, &mut emit));
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
        {
            let (decoder, encoder, out) = (&mut self.decoder, &mut self.encoder, &mut self.out);
            let mut emit = |event: Event<'_>| encoder.event(out, event);
            decoder.begin(&mut emit);
            self.parser
                .finish(|event, data| decoder.event(event, data, &mut emit));
        }
        self.parser_error();
        if !self.encoder.finished() {
            let (encoder, out) = (&mut self.encoder, &mut self.out);
            self.decoder
                .finish(&mut |event: Event<'_>| encoder.event(out, event));
        }
        &self.out
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
}
