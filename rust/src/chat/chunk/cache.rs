//! Reading the chunks of one stream, skipping what they repeat of the previous ones: the
//! envelope and template shortcuts of [`ChunkReader`] over the reader of chunk.rs.

use std::borrow::Cow;

use super::{read_top, Chunk, ChunkOf, DeltaOf, ReadError};
use crate::json::scan::{Mark, Scanner, Syntax};

/// Reads the chunks of one stream, skipping what they repeat of the previous ones.
///
/// Two shortcuts, both exactly equivalent to reading the chunk whole (which happens when
/// neither applies). They rest on the reader being deterministic, reading nothing past a
/// comma or a string's closing quote before it consumes it, and never looking at what a
/// value string holds: on the same bytes it makes the same decisions (and those validated),
/// and strings of other contents in the same places only change the strings it stores.
///
/// - The envelope: the members before `"choices"` (`id`, `object`, `created`, `model`,
///   `system_fingerprint`) are usually byte-identical in every chunk of a stream. After a
///   chunk is read, the longest prefix of its text that is `{` and members the reader
///   ignores, each followed by a comma, is kept; a later chunk starting with exactly those
///   bytes resumes the scan after them, in the state the prefix leaves: inside the top-level
///   object, a key next, no field set (ignored members set nothing; keys are compared after
///   unescaping, so an escaped `"choices"` never counts as ignored).
/// - The template: usually the whole chunk repeats the previous one but for a few value
///   strings (the content delta, OpenAI's `obfuscation` padding...): see `Template`.
#[derive(Default)]
pub struct ChunkReader {
    pub(super) prefix: Vec<u8>,
    pub(super) template: Template,
    /// The marks of the last whole read (kept for its allocation).
    marks: Vec<Mark>,
}

impl ChunkReader {
    /// Read `json` into `chunk`, which must be `Chunk::default()` (filling it in place
    /// saves moving it around).
    #[inline(always)]
    pub fn read<'a>(
        &mut self,
        json: &'a str,
        chunk: &mut Chunk<'a>,
    ) -> std::result::Result<(), ReadError> {
        if self.template.read(json, chunk) {
            self.template.misses = 0;
            self.template.wait = 0;
            return Ok(());
        }
        // A stream whose chunks do not fit their predecessors' templates (numbers that
        // change, say) is read whole, with templates made ever more rarely (at most every
        // 64th chunk), not to spend on them for nothing.
        let build = self.template.wait == 0;
        if !build {
            self.template.wait -= 1;
            self.template.text.clear();
        }
        let resume = !self.prefix.is_empty() && json.as_bytes().starts_with(&self.prefix);
        let mut scanner = Scanner::new(json);
        scanner.marks = std::mem::take(&mut self.marks);
        scanner.marks.clear();
        if resume {
            scanner.pos = self.prefix.len();
        }
        let top = read_top(&mut scanner, resume, build, chunk);
        self.marks = scanner.marks;
        // Too many for a template: keep the count, not a big buffer.
        self.marks.truncate(MAX_HOLES + 1);
        self.marks.shrink_to(2 * MAX_HOLES);
        let top = top.map_err(|Syntax| ReadError::InvalidJson)?;
        top.check(chunk)?;
        if !resume {
            self.prefix.clear();
            if top.prefix_end <= MAX_KEPT {
                self.prefix
                    .extend_from_slice(&json.as_bytes()[..top.prefix_end]);
            }
        }
        if build {
            self.template.build(json, &self.marks, chunk);
            self.template.wait = (1 << self.template.misses.min(6)) - 1;
            self.template.misses += 1;
        }
        Ok(())
    }
}

/// The longest envelope or template kept (a stream's big chunks are dominated by their
/// strings, which these shortcuts do not spare; this bounds what a stream holds).
const MAX_KEPT: usize = 16 * 1024;
const MAX_HOLES: usize = 32;
const MAX_SLOTS: usize = 8;
const UNMAPPED: u8 = u8::MAX;

/// The text of the last chunk read whole, with holes where its value strings after the
/// envelope were (the reader marks them), and the chunk it read with, for each of its
/// strings, the hole it came from.
///
/// A chunk is read through the template when it has the template's bytes everywhere but in
/// the holes, and in each hole a string that the scanner validates and that ends right
/// where the template's did (where the next stretch of template bytes, from the closing
/// quote on, must follow). Reading it whole would make the same decisions on the same bytes
/// and on strings of the same extent (validated by the same code), so it would succeed with
/// the same chunk but for the strings, which are the holes' (and borrowed unless escaped,
/// as [`Scanner::string`] has it). A chunk that does not fit is read whole (so a template
/// never decides that a chunk is invalid).
///
/// A template holds at most `MAX_HOLES` holes, `MAX_SLOTS` of them strings of the chunk.
#[derive(Default)]
pub(super) struct Template {
    /// Empty: no template.
    pub(super) text: Vec<u8>,
    pub(super) holes: Vec<Hole>,
    /// The chunk, its strings given as slots (`Hole::slot`).
    shape: ChunkOf<u8>,
    /// Templates made since one last fitted, and chunks to read before making the next.
    misses: u32,
    wait: u32,
}

#[derive(Clone, Copy)]
pub(super) struct Hole {
    /// The first byte of the string's contents, and its closing quote.
    pub(super) start: usize,
    pub(super) end: usize,
    /// Which string of the chunk it holds, or `UNMAPPED`.
    slot: u8,
}

impl Template {
    /// Read `json` through the template, if it fits.
    pub(super) fn read<'a>(&self, json: &'a str, chunk: &mut Chunk<'a>) -> bool {
        if self.text.is_empty() {
            return false;
        }
        let bytes = json.as_bytes();
        let mut s = Scanner::new(json);
        let mut strings: [Option<Cow<'a, str>>; MAX_SLOTS] = Default::default();
        // The next template byte to compare, and where it goes in `json`.
        let (mut from, mut at) = (0, 0);
        for hole in &self.holes {
            let same = &self.text[from..hole.start];
            if bytes.get(at..at + same.len()) != Some(same) {
                return false;
            }
            s.pos = at + same.len();
            if hole.slot == UNMAPPED {
                if s.skip_string().is_err() {
                    return false;
                }
            } else {
                match s.string() {
                    Ok(text) => strings[hole.slot as usize] = Some(text),
                    Err(Syntax) => return false,
                }
            }
            // The closing quote, which the next stretch starts with.
            at = s.pos - 1;
            from = hole.end;
        }
        if bytes[at..] != self.text[from..] {
            return false;
        }
        fill(&self.shape, &mut strings, chunk);
        true
    }

    /// Make `chunk`, just read whole from `json` with these value strings marked, the
    /// template (or have none).
    fn build(&mut self, json: &str, marks: &[Mark], chunk: &Chunk<'_>) {
        self.text.clear();
        self.holes.clear();
        if marks.len() > MAX_HOLES || json.len() > MAX_KEPT {
            return;
        }
        self.holes.extend(marks.iter().map(|mark| Hole {
            start: mark.start,
            end: mark.end,
            slot: UNMAPPED,
        }));
        let holes = &mut self.holes;
        let mut slots = 0;
        let mut fits = true;
        // The hole a string of the chunk was read from: the last one marked with its
        // address. A borrowed string's address is its place in `json`; an unescaped one's
        // is its allocation, which an earlier string may have had before it was dropped
        // (a repeated key) but no other live one.
        let mut slot = |text: &Option<Cow<'_, str>>| -> Option<u8> {
            let address = text.as_ref()?.as_ptr() as usize;
            match marks.iter().rposition(|mark| mark.text == address) {
                Some(i) if holes[i].slot == UNMAPPED && slots < MAX_SLOTS => {
                    holes[i].slot = slots as u8;
                    slots += 1;
                    Some(slots as u8 - 1)
                }
                _ => {
                    fits = false;
                    None
                }
            }
        };
        self.shape = ChunkOf::default();
        map_strings(chunk, &mut self.shape, &mut slot);
        if fits {
            self.text.extend_from_slice(json.as_bytes());
        }
    }
}

/// The chunk of a template's shape with the strings read in its holes.
#[inline]
fn fill<'a>(shape: &ChunkOf<u8>, strings: &mut [Option<Cow<'a, str>>], chunk: &mut Chunk<'a>) {
    map_strings(shape, chunk, |slot| {
        slot.and_then(|i| strings[i as usize].take())
    });
}

/// Copy `from` into `to` (empty), each of its strings mapped by `f`, in reading order.
#[inline]
fn map_strings<S, T: Default>(
    from: &ChunkOf<S>,
    to: &mut ChunkOf<T>,
    mut f: impl FnMut(&Option<S>) -> Option<T>,
) {
    to.has_error = from.has_error;
    to.usage = from.usage;
    for choice in from.choices.iter() {
        let c = to.choices.push_default();
        c.finish_reason = f(&choice.finish_reason);
        if let Some(delta) = &choice.delta {
            let d = c.delta.insert(DeltaOf::default());
            d.reasoning_content = f(&delta.reasoning_content);
            d.reasoning_fallback = f(&delta.reasoning_fallback);
            d.content = f(&delta.content);
            d.refusal = f(&delta.refusal);
            for call in delta.tool_calls.iter() {
                let t = d.tool_calls.push_default();
                t.index = call.index;
                t.id = f(&call.id);
                t.name = f(&call.name);
                t.arguments = f(&call.arguments);
            }
        }
    }
}
