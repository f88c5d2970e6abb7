//! A validating JSON scanner for hand-written readers: one forward pass over the bytes, no
//! tree, no allocation unless a string holds escapes.
//!
//! It accepts exactly what orjson accepts (the pure-Python twins parse with orjson), which
//! is RFC 8259 strict: no trailing commas, comments, NaN/Infinity or leading zeros; no raw
//! control characters in strings; only the standard escapes, with `\u` surrogates paired;
//! no number whose value overflows an f64 (`1e400`), while integers beyond 64 bits are fine
//! (orjson reads them as floats); containers nested at most [`MAX_DEPTH`] deep. Readers
//! dispatch on the next byte ([`Scanner::ws`]) and read the values they want with the
//! typed methods; everything else goes through [`Scanner::skip_value`], which validates
//! what it skips.
//!
//! Errors carry no detail ([`Syntax`]): the callers only need to know that the text is not
//! valid JSON. EOF reads as byte 0, which no rule accepts, so it needs no test of its own.

use std::borrow::Cow;

/// The deepest nesting of arrays and objects accepted, counting the outermost container
/// as 1. orjson's limit (`'[' * 1024` parses, 1025 does not), so the native and Python
/// transducers agree on every input. (serde_json's recursion limit is 128, but it only
/// applies to the values a typed serde reader descends into, not to the ones it skips.)
pub const MAX_DEPTH: u32 = 1024;

/// The text is not valid JSON (or nests deeper than [`MAX_DEPTH`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Syntax;

pub type Result<T> = std::result::Result<T, Syntax>;

/// Where a value string lies: its first byte after the opening quote, its closing quote,
/// and the address of the text a reader made of it (0 if skipped).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    pub start: usize,
    pub end: usize,
    pub text: usize,
}

pub struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pub pos: usize,
    /// While set, [`Scanner::skip_value`] notes in `marks` where the strings it skips that
    /// are values (not keys) lie. Readers may note the strings they read.
    pub record: bool,
    pub marks: Vec<Mark>,
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// The first byte at or after `i` that is `"`, `\` or a control character (< 0x20), or
/// `bytes.len()`. Eight bytes at a time: in each mask below the lowest set bit marks a true
/// match (borrows only run upwards, so false positives sit above a true one), hence the
/// lowest set bit of their union is the first special byte.
#[inline(always)]
fn find_special(bytes: &[u8], mut i: usize) -> usize {
    while let Some(word) = bytes.get(i..i + 8) {
        let w = u64::from_le_bytes(word.try_into().unwrap());
        let quote = w ^ (LO * u64::from(b'"'));
        let backslash = w ^ (LO * u64::from(b'\\'));
        let found = (quote.wrapping_sub(LO) & !quote)
            | (backslash.wrapping_sub(LO) & !backslash)
            | (w.wrapping_sub(LO * 0x20) & !w);
        let found = found & HI;
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = bytes.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

#[inline]
fn hex_digit(b: u8) -> Option<u32> {
    match b {
        b'0'..=b'9' => Some(u32::from(b - b'0')),
        b'a'..=b'f' => Some(u32::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u32::from(b - b'A' + 10)),
        _ => None,
    }
}

impl<'a> Scanner<'a> {
    pub fn new(text: &'a str) -> Self {
        Scanner {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            record: false,
            marks: Vec::new(),
        }
    }

    /// The byte at the cursor, 0 at the end.
    #[inline(always)]
    pub fn peek(&self) -> u8 {
        self.bytes.get(self.pos).copied().unwrap_or(0)
    }

    /// Skip whitespace; the byte at the cursor after it (0 at the end).
    #[inline(always)]
    pub fn ws(&mut self) -> u8 {
        let b = self.peek();
        if b > b' ' {
            return b; // the usual case: compact JSON
        }
        self.ws_slow()
    }

    #[inline(never)]
    fn ws_slow(&mut self) -> u8 {
        loop {
            let b = self.peek();
            if !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                return b;
            }
            self.pos += 1;
        }
    }

    /// Whitespace to the end of the text and nothing else.
    pub fn end(&mut self) -> Result<()> {
        self.ws();
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(Syntax)
        }
    }

    /// `null`, `true` or `false` at the cursor (the byte after it is its container's to
    /// judge).
    #[inline]
    pub fn literal(&mut self, word: &'static [u8]) -> Result<()> {
        if self.bytes.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Syntax)
        }
    }

    /// `null` at the cursor.
    #[inline]
    pub fn null(&mut self) -> Result<()> {
        self.literal(b"null")
    }

    // -- strings -----------------------------------------------------------------------

    /// A string; the cursor is just past its opening quote. Borrowed from the text unless
    /// it holds escapes.
    #[inline(always)]
    pub fn string(&mut self) -> Result<Cow<'a, str>> {
        let start = self.pos;
        let i = find_special(self.bytes, start);
        match self.bytes.get(i) {
            Some(b'"') => {
                self.pos = i + 1;
                // Both ends are ASCII quotes, so this is a char boundary slice.
                Ok(Cow::Borrowed(&self.text[start..i]))
            }
            Some(b'\\') => self.unescape(start, i).map(Cow::Owned),
            _ => Err(Syntax),
        }
    }

    #[cold]
    fn unescape(&mut self, start: usize, mut i: usize) -> Result<String> {
        let mut out = String::with_capacity(i - start + 16);
        let mut seg = start;
        loop {
            // bytes[i] is '"' or '\\' (a control character or the end is an error).
            out.push_str(&self.text[seg..i]);
            match self.bytes.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos = i + 1;
                    out.push(self.escape()?);
                }
                _ => return Err(Syntax),
            }
            seg = self.pos;
            i = find_special(self.bytes, seg);
        }
    }

    /// One escape; the cursor is just past its backslash.
    #[inline]
    fn escape(&mut self) -> Result<char> {
        let b = self.peek();
        self.pos += 1;
        Ok(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                match high {
                    0xD800..=0xDBFF => {
                        // A high surrogate must be followed by an escaped low one.
                        if self.peek() != b'\\' || self.bytes.get(self.pos + 1) != Some(&b'u') {
                            return Err(Syntax);
                        }
                        self.pos += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(Syntax);
                        }
                        let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                        char::from_u32(c).ok_or(Syntax)?
                    }
                    0xDC00..=0xDFFF => return Err(Syntax),
                    _ => char::from_u32(high).ok_or(Syntax)?,
                }
            }
            _ => return Err(Syntax),
        })
    }

    fn hex4(&mut self) -> Result<u32> {
        let digits = self.bytes.get(self.pos..self.pos + 4).ok_or(Syntax)?;
        let mut n = 0;
        for &d in digits {
            n = n << 4 | hex_digit(d).ok_or(Syntax)?;
        }
        self.pos += 4;
        Ok(n)
    }

    /// Validate a string without building it; the cursor is just past its opening quote.
    #[inline]
    pub fn skip_string(&mut self) -> Result<()> {
        let mut i = find_special(self.bytes, self.pos);
        loop {
            match self.bytes.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.pos = i + 1;
                    self.escape()?;
                    i = find_special(self.bytes, self.pos);
                }
                _ => return Err(Syntax),
            }
        }
    }

    // -- numbers -----------------------------------------------------------------------

    /// A number at the cursor (which is at `-` or a digit). `Some` when orjson reads it as
    /// a non-negative integer that fits 64 bits (what Python's `uint` takes; `-0` is the
    /// integer 0 there), else `None` (negative integers, floats, integers beyond u64).
    #[inline]
    pub fn number(&mut self) -> Result<Option<u64>> {
        let start = self.pos;
        let negative = self.peek() == b'-';
        if negative {
            self.pos += 1;
        }
        let int_start = self.pos;
        let mut value: u64 = 0;
        let mut big = false;
        match self.peek() {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                while let d @ b'0'..=b'9' = self.peek() {
                    match value
                        .checked_mul(10)
                        .and_then(|v| v.checked_add(u64::from(d - b'0')))
                    {
                        Some(v) => value = v,
                        None => big = true,
                    }
                    self.pos += 1;
                }
            }
            _ => return Err(Syntax),
        }
        let int_digits = self.pos - int_start;
        let mut float = false;
        if self.peek() == b'.' {
            self.pos += 1;
            self.digits()?;
            float = true;
        }
        let mut exponent: i64 = 0;
        if matches!(self.peek(), b'e' | b'E') {
            self.pos += 1;
            let negative_exponent = match self.peek() {
                b'-' => {
                    self.pos += 1;
                    true
                }
                b'+' => {
                    self.pos += 1;
                    false
                }
                _ => false,
            };
            let exp_start = self.pos;
            self.digits()?;
            for &d in &self.bytes[exp_start..self.pos] {
                // Saturating: any exponent this large sends the value to the exact check.
                exponent = (exponent * 10 + i64::from(d - b'0')).min(1 << 40);
            }
            if negative_exponent {
                exponent = -exponent;
            }
            float = true;
        }
        if float || big {
            // The magnitude is below 10^(int_digits + exponent); below 1e308 it is finite.
            // Otherwise ask the correctly rounding parser whether it overflows (orjson's
            // "number is infinity when parsed as double").
            if int_digits as i64 + exponent > 308 && self.overflows(start) {
                return Err(Syntax);
            }
            return Ok(None);
        }
        if negative {
            return Ok(if value == 0 { Some(0) } else { None });
        }
        Ok(Some(value))
    }

    #[cold]
    fn overflows(&self, start: usize) -> bool {
        self.text[start..self.pos]
            .parse::<f64>()
            .map_or(true, f64::is_infinite)
    }

    /// One or more digits.
    #[inline]
    fn digits(&mut self) -> Result<()> {
        if !self.peek().is_ascii_digit() {
            return Err(Syntax);
        }
        while self.peek().is_ascii_digit() {
            self.pos += 1;
        }
        Ok(())
    }

    // -- containers --------------------------------------------------------------------

    /// The members of an object, each handed to `field` with the cursor at its value (which
    /// `field` must consume); the cursor is just past the `{`.
    #[inline(always)]
    pub fn members(&mut self, mut field: impl FnMut(&mut Self, &str) -> Result<()>) -> Result<()> {
        let mut b = self.ws();
        if b == b'}' {
            self.pos += 1;
            return Ok(());
        }
        loop {
            if b != b'"' {
                return Err(Syntax);
            }
            self.pos += 1;
            let key = self.string()?;
            if self.ws() != b':' {
                return Err(Syntax);
            }
            self.pos += 1;
            field(self, &key)?;
            b = self.ws();
            if b == b',' {
                self.pos += 1;
                b = self.ws();
            } else if b == b'}' {
                self.pos += 1;
                return Ok(());
            } else {
                return Err(Syntax);
            }
        }
    }

    /// The elements of an array, each read by `element` (which must consume one value);
    /// the cursor is just past the `[`.
    #[inline(always)]
    pub fn elements(&mut self, mut element: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        if self.ws() == b']' {
            self.pos += 1;
            return Ok(());
        }
        loop {
            element(self)?;
            let b = self.ws();
            if b == b',' {
                self.pos += 1;
            } else if b == b']' {
                self.pos += 1;
                return Ok(());
            } else {
                return Err(Syntax);
            }
        }
    }

    /// Validate and skip one value (after optional whitespace). `depth`: how many containers
    /// enclose it.
    #[inline]
    pub fn skip_value(&mut self, depth: u32) -> Result<()> {
        match self.ws() {
            b'{' | b'[' => self.skip_container(depth),
            b => self.skip_scalar(b),
        }
    }

    #[inline]
    fn skip_scalar(&mut self, b: u8) -> Result<()> {
        match b {
            b'"' => {
                self.pos += 1;
                if self.record {
                    self.skip_marked_string()
                } else {
                    self.skip_string()
                }
            }
            b'-' | b'0'..=b'9' => self.number().map(drop),
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            _ => Err(Syntax),
        }
    }

    #[inline(never)]
    fn skip_marked_string(&mut self) -> Result<()> {
        let start = self.pos;
        self.skip_string()?;
        self.marks.push(Mark {
            start,
            end: self.pos - 1,
            text: 0,
        });
        Ok(())
    }

    /// A container at the cursor, without recursion: a bit per open level says whether it
    /// is an object.
    fn skip_container(&mut self, depth: u32) -> Result<()> {
        const WORDS: usize = MAX_DEPTH as usize / 64;
        let mut objects = [0u64; WORDS];
        let mut open: usize = 0;
        'open: loop {
            // At a '{' or '[' (the level it opens is depth + open + 1).
            let object = self.bytes[self.pos] == b'{';
            if depth as usize + open >= MAX_DEPTH as usize {
                return Err(Syntax);
            }
            let (word, bit) = (open / 64, 1u64 << (open % 64));
            if object {
                objects[word] |= bit;
            } else {
                objects[word] &= !bit;
            }
            open += 1;
            self.pos += 1;
            let close = if object { b'}' } else { b']' };
            if self.ws() == close {
                self.pos += 1;
                open -= 1;
                if open == 0 {
                    return Ok(());
                }
            } else {
                if object {
                    self.key_colon()?;
                }
                match self.ws() {
                    b'{' | b'[' => continue 'open,
                    b => self.skip_scalar(b)?,
                }
            }
            // After a value inside the innermost open container.
            loop {
                let top = open - 1;
                let object = objects[top / 64] & (1u64 << (top % 64)) != 0;
                match self.ws() {
                    b',' => {
                        self.pos += 1;
                        if object {
                            self.ws();
                            self.key_colon()?;
                        }
                        match self.ws() {
                            b'{' | b'[' => continue 'open,
                            b => self.skip_scalar(b)?,
                        }
                    }
                    b'}' if object => {
                        self.pos += 1;
                        open -= 1;
                        if open == 0 {
                            return Ok(());
                        }
                    }
                    b']' if !object => {
                        self.pos += 1;
                        open -= 1;
                        if open == 0 {
                            return Ok(());
                        }
                    }
                    _ => return Err(Syntax),
                }
            }
        }
    }

    /// A key and its colon (after whitespace the caller skipped).
    #[inline]
    fn key_colon(&mut self) -> Result<()> {
        if self.peek() != b'"' {
            return Err(Syntax);
        }
        self.pos += 1;
        self.skip_string()?;
        if self.ws() != b':' {
            return Err(Syntax);
        }
        self.pos += 1;
        Ok(())
    }
}
