//! JSON output helpers: string escaping identical to serde_json's and orjson's (control
//! characters as \b \t \n \f \r or lowercase \u00XX, `"` and `\` escaped, all else raw UTF-8),
//! so the native and pure-Python transducers emit the same bytes.

const HEX: &[u8; 16] = b"0123456789abcdef";

// 0: copy; b'u': \u00XX; other: the character after the backslash.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = b'u';
        i += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Append `s` as a quoted JSON string.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape = ESCAPE[byte as usize];
        if escape == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if escape == b'u' {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(byte >> 4) as usize]);
            out.push(HEX[(byte & 0xf) as usize]);
        } else {
            out.push(b'\\');
            out.push(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

pub fn write_u64(out: &mut Vec<u8>, n: u64) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(n).as_bytes());
}

/// For sums of counts, which may pass u64 (Python's integers do not overflow).
pub fn write_u128(out: &mut Vec<u8>, n: u128) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(n).as_bytes());
}

// -- members written straight into an event's bytes ----------------------------------------
// A member's `head` is the static JSON text before its value: the comma or brace that opens
// it and its quoted key, e.g. `,"title":`.

/// `head`, then `value` as a JSON string.
#[inline]
pub fn str_member(out: &mut Vec<u8>, head: &[u8], value: &str) {
    out.extend_from_slice(head);
    write_str(out, value);
}

/// `head`, then `value`.
#[inline]
pub fn u64_member(out: &mut Vec<u8>, head: &[u8], value: u64) {
    out.extend_from_slice(head);
    write_u64(out, value);
}

/// `head`, then `value` (a sum of counts, which may pass u64).
#[inline]
pub fn u128_member(out: &mut Vec<u8>, head: &[u8], value: u128) {
    out.extend_from_slice(head);
    write_u128(out, value);
}

/// The members of a JSON array: each item as `write` writes it, with commas between.
#[inline]
pub fn items<T>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = T>,
    mut write: impl FnMut(&mut Vec<u8>, T),
) {
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(out, item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_serde_json() {
        let all: String = (0u32..0x80)
            .chain([0xe9, 0x2028, 0xffff, 0x1f600])
            .filter_map(char::from_u32)
            .collect();
        let mut out = Vec::new();
        write_str(&mut out, &all);
        assert_eq!(out, serde_json::to_vec(&all).unwrap());
    }
}
