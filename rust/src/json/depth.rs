//! How deep a JSON text nests, read off its bytes: the request-body bound of the server
//! (twin of `python/hydra_proxy/json/depth.py`, which walks the parsed value).

/// Whether valid JSON `text` nests arrays and objects more than `limit` levels deep (an
/// array or object is level 1). One pass over the bytes, brackets inside strings skipped;
/// it stops at the first level past `limit`. On text that is not valid JSON the answer
/// means nothing: the caller has parsed it first.
pub fn nested_deeper_than(text: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut rest = text;
    while let Some(at) = rest
        .iter()
        .position(|b| matches!(b, b'"' | b'{' | b'[' | b'}' | b']'))
    {
        match rest[at] {
            b'"' => rest = after_string(&rest[at + 1..]),
            b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
                rest = &rest[at + 1..];
            }
            _ => {
                depth = depth.saturating_sub(1);
                rest = &rest[at + 1..];
            }
        }
    }
    false
}

/// What follows the string whose opening quote came just before `text`.
fn after_string(text: &[u8]) -> &[u8] {
    let mut i = 0;
    while let Some(at) = memchr::memchr2(b'"', b'\\', &text[i..]) {
        if text[i + at] == b'"' {
            return &text[i + at + 1..];
        }
        i += at + 2; // an escape: the next byte is never the closing quote
        if i >= text.len() {
            break;
        }
    }
    &[]
}

#[cfg(test)]
mod tests {
    use super::nested_deeper_than;

    #[test]
    fn counts_arrays_and_objects_and_skips_strings() {
        assert!(!nested_deeper_than(br#"{"a": [1, {"b": 2}]}"#, 3));
        assert!(nested_deeper_than(br#"{"a": [1, {"b": [2]}]}"#, 3));
        assert!(!nested_deeper_than(br#"{"a": "[[[[{{{{\"[[["}"#, 1));
        assert!(!nested_deeper_than(br#"["\\", "]]"]"#, 1));
        assert!(!nested_deeper_than(b"42", 0));
        assert!(nested_deeper_than(b"[[[]],[]]", 2));
        assert!(!nested_deeper_than(b"[[[]],[[]]]", 3));
    }
}
