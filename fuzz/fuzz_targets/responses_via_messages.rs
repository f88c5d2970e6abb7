//! responses_via_messages: arbitrary upstream bytes, split anywhere, under a drawn bound.
#![no_main]

#[path = "common.rs"]
mod common;

use _native::transducers as t;
use common::options;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (bound, chunks) = common::split(data);
    let mut stream = t::responses_via_messages("r", "m", 1, 1, options(), bound);
    for chunk in chunks {
        let out = stream.feed(chunk);
        assert!(out.is_empty() || out.ends_with(b"\n\n"), "output ends mid-event");
        assert!(stream.buffered_bytes() <= bound, "the parser holds more than the bound");
    }
    let out = stream.finish();
    assert!(out.is_empty() || out.ends_with(b"\n\n"), "output ends mid-event");
    assert!(stream.finished(), "upstream EOF always ends the client's stream");
    assert!(stream.feed(b"data: {}\n\n").is_empty(), "bytes after the end");
});
