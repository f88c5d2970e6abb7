//! Thinking signatures made by the proxy (twin of python/hydra_proxy/signature.py):
//! `hydra1.` + base64url(HMAC-SHA256(key, b"hydra1\0" + thinking)[..18]).

use base64::engine::general_purpose::URL_SAFE;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const PREFIX: &str = "hydra1.";

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
}
