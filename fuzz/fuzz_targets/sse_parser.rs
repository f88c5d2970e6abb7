//! The SSE parser: arbitrary bytes split anywhere give the same events as whole, within the
//! bound, and a bounded parse delivers a prefix of the unbounded one.
#![no_main]

#[path = "common.rs"]
mod common;

use _native::sse::SseParser;

type Events = Vec<(Option<Vec<u8>>, Vec<u8>)>;

fn parse(chunks: &[&[u8]], bound: usize) -> (Events, Option<String>) {
    let mut parser = SseParser::new(bound);
    let mut events = Vec::new();
    for chunk in chunks {
        parser.feed(chunk, |e, d| events.push((e.map(<[u8]>::to_vec), d.to_vec())));
        assert!(parser.buffered_bytes() <= bound, "the parser holds more than the bound");
    }
    parser.finish(|e, d| events.push((e.map(<[u8]>::to_vec), d.to_vec())));
    assert_eq!(parser.buffered_bytes(), 0);
    (events, parser.error().map(str::to_owned))
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (bound, chunks) = common::split(data);
    let body: Vec<u8> = chunks.concat();
    let whole = parse(&[&body], usize::MAX);
    assert_eq!(parse(&chunks, usize::MAX), whole, "the split changed the events");
    let (bounded, error) = parse(&chunks, bound);
    assert_eq!(bounded[..], whole.0[..bounded.len()]);
    if error.is_none() {
        assert_eq!(bounded, whole.0);
    }
});
