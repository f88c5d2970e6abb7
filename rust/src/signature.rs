//! Thinking signatures made by the proxy (twin of python/hydra_proxy/signature.py, which
//! documents both kinds): reasoning text, `hydra1.` + base64url(HMAC-SHA256(key,
//! b"hydra1\0" + thinking)[..18]); a carried upstream token, `hydra1.<kind>.<payload>.` +
//! base64url(HMAC-SHA256(key, b"hydra1-carried\0" + kind + b"\0" + payload)[..18]).

use base64::engine::general_purpose::URL_SAFE;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const PREFIX: &str = "hydra1.";
/// The carrier kind of a Gemini `thoughtSignature`.
pub const KIND_GEMINI_THOUGHT_SIGNATURE: &str = "gts";
const MAC_CHARS: usize = 24;

pub fn sign_thinking(thinking: &str, key: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(b"hydra1\0");
    mac.update(thinking.as_bytes());
    let digest = mac.finalize().into_bytes();
    let mut signature = String::with_capacity(PREFIX.len() + 24);
    signature.push_str(PREFIX);
    URL_SAFE.encode_string(&digest[..18], &mut signature);
    signature
}

fn is_kind(kind: &str) -> bool {
    (1..=16).contains(&kind.len())
        && kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Both base64 alphabets and padding, never `.` (the field separator).
fn is_payload(payload: &str) -> bool {
    !payload.is_empty()
        && payload
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'=' | b'-'))
}

fn carrier_mac(kind: &str, payload: &str, key: &[u8], out: &mut String) {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(b"hydra1-carried\0");
    mac.update(kind.as_bytes());
    mac.update(b"\0");
    mac.update(payload.as_bytes());
    let digest = mac.finalize().into_bytes();
    URL_SAFE.encode_string(&digest[..18], out);
}

/// A proxy signature that carries `payload` (an upstream token) of the given kind; None
/// for a kind or payload outside the allowed alphabets (Python raises ValueError).
pub fn sign_carried(kind: &str, payload: &str, key: &[u8]) -> Option<String> {
    if !is_kind(kind) || !is_payload(payload) {
        return None;
    }
    let mut signature = String::with_capacity(PREFIX.len() + kind.len() + payload.len() + 26);
    signature.push_str(PREFIX);
    signature.push_str(kind);
    signature.push('.');
    signature.push_str(payload);
    signature.push('.');
    carrier_mac(kind, payload, key, &mut signature);
    Some(signature)
}

/// The payload a proxy signature of `kind` carries, or None (not a carrier of this kind,
/// malformed, or its MAC does not verify under `key`).
pub fn open_carried<'a>(signature: &'a str, kind: &str, key: &[u8]) -> Option<&'a str> {
    let rest = signature.strip_prefix(PREFIX)?;
    let (head, tail) = rest.split_once('.')?;
    if head != kind {
        return None;
    }
    let (payload, mac) = tail.rsplit_once('.')?;
    if mac.len() != MAC_CHARS || !is_payload(payload) {
        return None;
    }
    let mut expected = String::with_capacity(MAC_CHARS);
    carrier_mac(kind, payload, key, &mut expected);
    // Constant time, as Python's hmac.compare_digest.
    let differ = expected
        .bytes()
        .zip(mac.bytes())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    (differ == 0).then_some(payload)
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_vector() {
        // The same value python/hydra_proxy/signature.py computes (tests/test_signature.py).
        assert_eq!(
            super::sign_thinking("We need to respond to a greeting. The user", b"k"),
            "hydra1.ouXjsIgBpEAPOn69ViBmJxDM"
        );
    }

    #[test]
    fn carried_vector() {
        // The value tests/test_gemini_thought_signature.py pins for signature.py.
        let key: Vec<u8> = (0u8..32).collect();
        let key = key.as_slice();
        let payload = "EpwICpkIAXLI2nx+/w==";
        let signed = super::sign_carried("gts", payload, key).unwrap();
        assert_eq!(
            signed,
            "hydra1.gts.EpwICpkIAXLI2nx+/w==.2uh9x1y90Fh8bgbXXWz41U_i"
        );
        assert_eq!(super::open_carried(&signed, "gts", key), Some(payload));
        assert_eq!(super::open_carried(&signed, "gts", b"other"), None);
        assert_eq!(super::open_carried(&signed, "xyz", key), None);
        assert_eq!(super::sign_carried("gts", "a.b", key), None);
        assert_eq!(super::sign_carried("GTS", "ab", key), None);
    }
}
