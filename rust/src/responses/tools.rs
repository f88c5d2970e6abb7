//! Tool names between a Responses client and the canonical request (twin of
//! python/hydra_proxy/responses/tools.py): a namespace's tools flattened into one name.

/// `<namespace>__<name>`, shortened with a hash when too long (responses.tools.flatten,
/// without the names already taken: a stream has no tool list).
pub fn flatten(namespace: &str, name: &str) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write;
    let flat = format!("{namespace}__{name}");
    if flat.chars().count() <= 64 {
        return flat;
    }
    let digest = Sha256::digest(flat.as_bytes());
    let mut out: String = flat.chars().take(64 - 9).collect();
    out.push('_');
    for byte in &digest[..4] {
        // (Writing to a String cannot fail.)
        let _ = write!(out, "{byte:02x}");
    }
    out
}
