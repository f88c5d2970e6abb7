//! chat_via_messages: arbitrary upstream bytes, split anywhere, under a drawn bound (common::check).
#![no_main]

#[path = "common.rs"]
mod common;

use _native::transducers::ChatViaMessagesStream;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::check::<ChatViaMessagesStream>(data));
