//! responses_via_gemini: arbitrary upstream bytes, split anywhere, under a drawn bound (common::check).
#![no_main]

#[path = "common.rs"]
mod common;

use _native::transducers::ResponsesViaGeminiStream;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::check::<ResponsesViaGeminiStream>(data));
