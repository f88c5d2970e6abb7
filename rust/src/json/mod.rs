//! JSON in and out of the transducers.

pub mod read;
pub mod scan;
pub mod write;

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
