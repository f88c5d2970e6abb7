//! JSON in and out of the transducers.

use std::borrow::Cow;

pub mod depth;
pub mod read;
pub mod scan;
pub mod shaped;
pub mod spans;
pub mod write;

/// An upstream event's text: its bytes as UTF-8, with U+FFFD for what is not (as Python's
/// `decode("utf-8", "replace")`). Valid UTF-8 is the rule; the lossy decoder is only for the
/// exception, as it is several times slower than validation on the hot path.
#[inline]
pub fn text(data: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(data) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(data),
    }
}

/// Strip JSON whitespace (not Rust's ASCII whitespace, which also strips form feed).
pub fn trim_json_ws(data: &[u8]) -> &[u8] {
    let is_ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let start = data.iter().position(|b| !is_ws(b)).unwrap_or(data.len());
    let end = data
        .iter()
        .rposition(|b| !is_ws(b))
        .map_or(start, |i| i + 1);
    &data[start..end]
}

/// Whether `text` is one JSON value as orjson (the Python twins' parser) accepts it: the
/// validating scanner's rules and depth limit, whitespace around allowed.
pub fn is_valid(text: &str) -> bool {
    let mut scanner = scan::Scanner::new(text);
    scanner.skip_value(0).is_ok() && scanner.end().is_ok()
}

/// JSON text as orjson reads it: validated by the scanner ([`is_valid`]), then read as a
/// tree without serde_json's own recursion limit (the scanner bounded the depth).
pub fn parse(text: &str) -> Option<serde_json::Value> {
    if !is_valid(text) {
        return None;
    }
    let mut reader = serde_json::Deserializer::from_str(text);
    reader.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut reader).ok()
}

/// `text` (valid by [`is_valid`]) with each object's repeated keys read as orjson reads
/// them: the value of the last occurrence at the place of the first. `None` if no object
/// repeats a key. The typed readers fail at the first wrong-typed value of a known key,
/// while the Python twins see only the last one, so a shape error is checked again on this.
pub fn last_key_wins(text: &str) -> Option<String> {
    let mut scanner = scan::Scanner::new(text);
    let mut out = String::with_capacity(text.len());
    let mut repeated = false;
    rewrite_value(&mut scanner, text, &mut out, &mut repeated).ok()?;
    repeated.then_some(out)
}

fn rewrite_value(
    s: &mut scan::Scanner<'_>,
    text: &str,
    out: &mut String,
    repeated: &mut bool,
) -> scan::Result<()> {
    match s.ws() {
        b'{' => {
            s.pos += 1;
            let mut members: Vec<(String, String)> = Vec::new();
            s.members(|s, key| {
                let mut value = String::new();
                rewrite_value(s, text, &mut value, repeated)?;
                match members.iter_mut().find(|(k, _)| k == key) {
                    Some(member) => {
                        *repeated = true;
                        member.1 = value;
                    }
                    None => members.push((key.to_owned(), value)),
                }
                Ok(())
            })?;
            out.push('{');
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let mut quoted = Vec::new();
                write::write_str(&mut quoted, key);
                out.push_str(std::str::from_utf8(&quoted).map_err(|_| scan::Syntax)?);
                out.push(':');
                out.push_str(value);
            }
            out.push('}');
        }
        b'[' => {
            s.pos += 1;
            out.push('[');
            let mut first = true;
            s.elements(|s| {
                if !first {
                    out.push(',');
                }
                first = false;
                rewrite_value(s, text, out, repeated)
            })?;
            out.push(']');
        }
        _ => {
            s.ws();
            let start = s.pos;
            s.skip_value(0)?;
            out.push_str(&text[start..s.pos]);
        }
    }
    Ok(())
}
