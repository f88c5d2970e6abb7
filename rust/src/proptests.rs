//! Property tests (bounded, part of `cargo test`) over the SSE parser and the
//! transducers: arbitrary bytes split anywhere never panic, the parser never holds more
//! than the event bound, and upstream EOF always ends the client's stream. Byte-identity
//! with Python and the client grammars are checked by tests/property/test_fuzz_streams.py; longer
//! runs are the cargo-fuzz targets in fuzz/.

use proptest::prelude::*;

use crate::anthropic::{AnthropicDecoder, AnthropicEncoder};
use crate::chat::{ChatDecoder, ChatEncoder};
use crate::gemini::{GeminiDecoder, GeminiEncoder};
use crate::responses::{ResponsesDecoder, ResponsesEncoder, ResponsesOptions};
use crate::sse::SseParser;
use crate::stream::{Decoder, Encoder, Transducer};
use crate::transducers::{self, Upstream};

/// What the properties ask of any composition.
trait Stream {
    fn feed(&mut self, chunk: &[u8]) -> Vec<u8>;
    fn finish(&mut self) -> Vec<u8>;
    fn buffered_bytes(&self) -> usize;
    fn finished(&self) -> bool;
}

impl<D: Decoder, E: Encoder> Stream for Transducer<D, E> {
    fn feed(&mut self, chunk: &[u8]) -> Vec<u8> {
        Transducer::feed(self, chunk).to_vec()
    }
    fn finish(&mut self) -> Vec<u8> {
        Transducer::finish(self).to_vec()
    }
    fn buffered_bytes(&self) -> usize {
        Transducer::buffered_bytes(self)
    }
    fn finished(&self) -> bool {
        Transducer::finished(self)
    }
}

const KEY: &[u8] = b"proptest-key";

/// A client encoder as the properties start it: every option that adds output on.
trait Client {
    fn client() -> Self;
}

impl Client for AnthropicEncoder {
    fn client() -> Self {
        AnthropicEncoder::new("m", "c", 1)
    }
}

impl Client for ChatEncoder {
    fn client() -> Self {
        ChatEncoder::new("c", "m", 1, true, Some(KEY))
    }
}

impl Client for ResponsesEncoder {
    fn client() -> Self {
        let options = ResponsesOptions {
            echo: "{}",
            signing_key: Some(KEY),
            ..ResponsesOptions::default()
        };
        ResponsesEncoder::new("r", "m", 1, 1, options)
    }
}

impl Client for GeminiEncoder {
    fn client() -> Self {
        GeminiEncoder::new("r", "m", true, Some(KEY))
    }
}

macro_rules! cases {
    ($($name:ident: $decoder:ident => $encoder:ident,)*) => {
        |bound: usize| -> Vec<(&'static str, Box<dyn Stream>)> {
            vec![$((
                stringify!($name),
                Box::new(Transducer::new(
                    $decoder::upstream("m", Some(KEY)),
                    $encoder::client(),
                    bound,
                )),
            )),*]
        }
    };
}

/// Every composition, fresh, under `bound`.
fn compositions(bound: usize) -> Vec<(&'static str, Box<dyn Stream>)> {
    transducers::compositions!(cases)(bound)
}

/// Pieces an SSE stream is made of, and pieces that break one.
const TOKENS: &[&[u8]] = &[
    b"\n", b"\n\n", b"\r", b"\r\n", b"data: ", b"event: error\n", b"event: ", b":", b"{", b"}",
    b"[", b"\"", b"\\", b"\xff", b"\xef\xbb\xbf", b"\x00", b"[DONE]", b"<html>",
    b"{\"error\":{\"message\":\"m\"}}",
    b"{\"type\":\"message_start\",\"message\":{}}",
    b"{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\"}}",
    b"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}",
    b"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":null}]}",
    b"{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}}]}",
    b"{\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"x\"}",
    b"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]},\"finishReason\":\"STOP\"}]}",
];

fn body() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        proptest::sample::select(TOKENS).prop_map(<[u8]>::to_vec),
        proptest::collection::vec(any::<u8>(), 0..12),
    ];
    proptest::collection::vec(piece, 0..48).prop_map(|pieces| pieces.concat())
}

fn split(body: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    points.sort_unstable();
    let mut start = 0;
    let mut out = Vec::new();
    for point in points {
        out.push(body[start..point].to_vec());
        start = point;
    }
    out.push(body[start..].to_vec());
    out
}

type Events = Vec<(Option<Vec<u8>>, Vec<u8>)>;

fn parse(chunks: &[Vec<u8>], bound: usize) -> (Events, Option<String>) {
    let mut parser = SseParser::new(bound);
    let mut events = Vec::new();
    for chunk in chunks {
        parser.feed(chunk, |e, d| {
            events.push((e.map(<[u8]>::to_vec), d.to_vec()));
        });
        assert!(
            parser.buffered_bytes() <= bound,
            "the parser holds more than the bound"
        );
    }
    parser.finish(|e, d| events.push((e.map(<[u8]>::to_vec), d.to_vec())));
    assert_eq!(parser.buffered_bytes(), 0);
    (events, parser.error().map(str::to_owned))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn sse_parser_splits_and_bound(
        body in body(),
        cuts in proptest::collection::vec(any::<usize>(), 0..10),
        bound in prop_oneof![Just(8usize), Just(64), Just(1024)],
    ) {
        let whole = parse(std::slice::from_ref(&body), usize::MAX);
        let chunks = split(&body, &cuts);
        prop_assert_eq!(&parse(&chunks, usize::MAX), &whole);
        let (bounded, error) = parse(&chunks, bound);
        prop_assert_eq!(&bounded[..], &whole.0[..bounded.len()]);
        if error.is_none() {
            prop_assert_eq!(bounded, whole.0);
        }
    }

    #[test]
    fn every_composition_ends_and_stays_bounded(
        body in prop_oneof![body(), proptest::collection::vec(any::<u8>(), 0..400)],
        cuts in proptest::collection::vec(any::<usize>(), 0..10),
        bound in prop_oneof![Just(16usize), Just(256), Just(crate::stream::DEFAULT_MAX_EVENT_BYTES)],
    ) {
        let chunks = split(&body, &cuts);
        for (name, mut stream) in compositions(bound) {
            let mut out = Vec::new();
            for chunk in &chunks {
                out.extend(stream.feed(chunk));
                prop_assert!(stream.buffered_bytes() <= bound, "{} holds more than the bound", name);
            }
            out.extend(stream.finish());
            prop_assert!(stream.finished(), "{} did not end at EOF", name);
            // (Gemini's events end in CRLF CRLF, as Gemini frames them)
            let ended = out.ends_with(b"\n\n") || out.ends_with(b"\r\n\r\n");
            prop_assert!(out.is_empty() || ended, "{} ends mid-event", name);
            let after = [stream.feed(b"data: {}\n\n"), stream.finish()].concat();
            prop_assert!(after.is_empty(), "{} sent bytes after its end", name);
        }
    }
}
