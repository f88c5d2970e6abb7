//! Every composition of the one `compositions!` table (rust/src/transducers.rs): the first
//! input byte picks one, the rest is arbitrary upstream bytes split anywhere under a drawn
//! bound (common::check). A composition added to the table is fuzzed with no edit here.
#![no_main]

#[path = "common.rs"]
mod common;

use _native::transducers::*;

macro_rules! pick {
    ($($name:ident: $decoder:ident => $encoder:ident,)*) => {
        /// Runs the composition numbered `which` (modulo their count) over `data`.
        fn run(which: u8, data: &[u8]) {
            let all: &[fn(&[u8])] = &[$(common::check::<$name>),*];
            all[usize::from(which) % all.len()](data);
        }
    };
}
_native::compositions!(pick);

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some((&which, rest)) = data.split_first() {
        run(which, rest);
    }
});
