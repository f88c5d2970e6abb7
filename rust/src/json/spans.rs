//! Where the elements of one array member of a JSON object stand in its bytes, so that a
//! long session's next request can be compared with the one before it element by element
//! (python/hydra_proxy/server/pipeline/previous_turn.py) and only what is new gets parsed.
//!
//! A fast structural pass, not a validator: what it splits is parsed by orjson afterwards
//! (the text around the array with `[]` in its place, and every element that is not
//! byte-equal to an element parsed before), so invalid JSON is still refused there. It
//! answers `None` for anything it does not read plainly: a key with an escape (it could
//! spell the member's name), the member twice, a value that is not an array, text after
//! the object.

/// The array under `key` in the JSON object `text`: the offsets of its `[` and just past
/// its `]`, each element's start and end, flattened (`[s0, e0, s1, e1, ...]`), and how
/// deep the whole text nests (an array or object is one level, as `depth` counts).
pub fn member_elements(text: &[u8], key: &[u8]) -> Option<(usize, usize, Vec<usize>, usize)> {
    let mut i = ws(text, 0);
    if text.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(text, i + 1);
    let mut found = None;
    let mut deepest = 1;
    if text.get(i) == Some(&b'}') {
        return None;
    }
    loop {
        if text.get(i) != Some(&b'"') {
            return None;
        }
        let close = i + 1 + memchr::memchr2(b'"', b'\\', &text[i + 1..])?;
        if text[close] == b'\\' {
            return None;
        }
        let name = &text[i + 1..close];
        i = ws(text, close + 1);
        if text.get(i) != Some(&b':') {
            return None;
        }
        i = ws(text, i + 1);
        if name == key {
            if found.is_some() {
                return None;
            }
            let (end, elements, depth) = elements(text, i)?;
            found = Some((i, end, elements));
            deepest = deepest.max(1 + depth);
            i = end;
        } else {
            let (end, depth) = skip_value(text, i)?;
            deepest = deepest.max(1 + depth);
            i = end;
        }
        i = ws(text, i);
        match text.get(i) {
            Some(b',') => i = ws(text, i + 1),
            Some(b'}') => break,
            _ => return None,
        }
    }
    if ws(text, i + 1) != text.len() {
        return None;
    }
    found.map(|(open, close, elements)| (open, close, elements, deepest))
}

/// How many leading elements of `now` are byte-equal to the elements of `before` at the
/// same places (element offsets as [`member_elements`] gives them).
pub fn same_leading(before: &[u8], before_at: &[usize], now: &[u8], now_at: &[usize]) -> usize {
    fn piece<'a>(text: &'a [u8], at: &[usize], k: usize) -> Option<&'a [u8]> {
        text.get(at[2 * k]..at[2 * k + 1])
    }
    let pairs = (before_at.len() / 2).min(now_at.len() / 2);
    (0..pairs)
        .take_while(
            |&k| match (piece(before, before_at, k), piece(now, now_at, k)) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
        )
        .count()
}

/// The array starting at `text[at]`: the offset past its `]`, its elements' offsets and
/// its depth.
fn elements(text: &[u8], at: usize) -> Option<(usize, Vec<usize>, usize)> {
    if text.get(at) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let mut deepest = 1;
    let mut i = ws(text, at + 1);
    if text.get(i) == Some(&b']') {
        return Some((i + 1, out, deepest));
    }
    loop {
        let (end, depth) = skip_value(text, i)?;
        deepest = deepest.max(1 + depth);
        out.push(i);
        out.push(end);
        i = ws(text, end);
        match text.get(i) {
            Some(b',') => i = ws(text, i + 1),
            Some(b']') => return Some((i + 1, out, deepest)),
            _ => return None,
        }
    }
}

/// The offset just past the value starting at `text[at]`, and how deep it nests.
fn skip_value(text: &[u8], at: usize) -> Option<(usize, usize)> {
    match *text.get(at)? {
        b'"' => Some((after_string(text, at + 1)?, 0)),
        b'{' | b'[' => {
            let (mut depth, mut deepest) = (0usize, 0usize);
            let mut i = at;
            loop {
                // One pass for all five bytes (two memchr calls could each run far ahead).
                let found = i + text[i..]
                    .iter()
                    .position(|b| matches!(b, b'"' | b'{' | b'[' | b'}' | b']'))?;
                match text[found] {
                    b'"' => i = after_string(text, found + 1)?,
                    b'{' | b'[' => {
                        depth += 1;
                        deepest = deepest.max(depth);
                        i = found + 1;
                    }
                    _ => {
                        depth -= 1;
                        i = found + 1;
                        if depth == 0 {
                            return Some((i, deepest));
                        }
                    }
                }
            }
        }
        _ => {
            let len = text[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(text.len() - at);
            (len > 0).then_some((at + len, 0))
        }
    }
}

/// The offset past the closing quote of the string whose contents start at `text[at]`:
/// the first quote after an even run of backslashes (text is escape-heavy: a file read
/// has a `\n` on every line, so quotes are searched for, not escapes).
fn after_string(text: &[u8], at: usize) -> Option<usize> {
    let mut from = at;
    loop {
        let quote = from + memchr::memchr(b'"', text.get(from..)?)?;
        let run = text[at..quote]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if run % 2 == 0 {
            return Some(quote + 1);
        }
        from = quote + 1;
    }
}

fn ws(text: &[u8], mut at: usize) -> usize {
    while matches!(text.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::{member_elements, same_leading};

    fn pieces<'a>(text: &'a [u8], key: &[u8]) -> Option<Vec<&'a str>> {
        let (open, close, at, _) = member_elements(text, key)?;
        assert_eq!(text[open], b'[');
        assert_eq!(text[close - 1], b']');
        let all = at
            .chunks(2)
            .map(|p| std::str::from_utf8(&text[p[0]..p[1]]).unwrap());
        Some(all.collect())
    }

    #[test]
    fn splits_the_member_array_and_skips_the_rest() {
        let text = br#" {"model": "m", "system": [{"a": "]}"}], "messages" : [ {"role":"user","content":"x\"]"} , [1,[2]], "s", 12 , true ], "n": null } "#;
        let got = pieces(text, b"messages").unwrap();
        assert_eq!(
            got,
            [
                r#"{"role":"user","content":"x\"]"}"#,
                "[1,[2]]",
                r#""s""#,
                "12",
                "true"
            ]
        );
        assert_eq!(
            pieces(br#"{"messages": []}"#, b"messages").unwrap().len(),
            0
        );
    }

    #[test]
    fn measures_the_depth_as_the_depth_check_does() {
        for text in [
            &br#"{"messages": []}"#[..],
            br#"{"a": [[[1]]], "messages": [{"b": [2]}, "x\\\"[[["], "c": {}}"#,
            br#"{"messages": [[[[[]]]], 1], "s": "\\"}"#,
        ] {
            let (_, _, _, depth) = member_elements(text, b"messages").unwrap();
            let depth_check = crate::json::depth::nested_deeper_than;
            assert!(
                depth_check(text, depth - 1) && !depth_check(text, depth),
                "{depth}"
            );
        }
    }

    #[test]
    fn answers_none_for_what_it_does_not_read_plainly() {
        for text in [
            &br#"{"messages": [1], "messages": [2]}"#[..],
            br#"{"messag\u0065s": [1], "messages": [2]}"#,
            br#"{"messages": {"a": 1}}"#,
            br#"{"messages": [1]} x"#,
            br#"{"messages": [1"#,
            br#"{"messages": [1,]}"#,
            br#"{"other": [1]}"#,
            br#"[{"messages": [1]}]"#,
            br#"{"messages": ["unterminated]}"#,
            b"{}",
            b"",
        ] {
            assert_eq!(
                member_elements(text, b"messages"),
                None,
                "{:?}",
                std::str::from_utf8(text)
            );
        }
    }

    #[test]
    fn counts_the_leading_elements_that_stayed_the_same() {
        let before = br#"{"messages": [{"a": 1}, {"b": 2}, {"c": 3}]}"#;
        let now = br#"{"model": "x", "messages": [{"a": 1}, {"b": 2}, {"c": 4}, {"d": 5}]}"#;
        let (_, _, b, _) = member_elements(before, b"messages").unwrap();
        let (_, _, n, _) = member_elements(now, b"messages").unwrap();
        assert_eq!(same_leading(before, &b, now, &n), 2);
        assert_eq!(same_leading(before, &b, before, &b), 3);
        assert_eq!(same_leading(before, &[], now, &n), 0);
    }
}
