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
