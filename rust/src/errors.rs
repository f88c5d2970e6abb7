//! Upstream errors -> Anthropic error types (twin of python/hydra_proxy/errors.py).

use serde_json::Value;

/// Every Anthropic error type: the one list (python.rs maps unknown ones to api_error).
pub const ANTHROPIC_ERROR_TYPES: [&str; 10] = [
    "invalid_request_error",
    "authentication_error",
    "billing_error",
    "permission_error",
    "not_found_error",
    "request_too_large",
    "rate_limit_error",
    "api_error",
    "timeout_error",
    "overloaded_error",
];

pub const MSG_UPSTREAM_DEFAULT: &str = "the upstream reported an error";

/// The Anthropic error type of an upstream HTTP error status (400-599) by itself. Other
/// 4xx: invalid_request_error; other 5xx: api_error.
pub fn status_class(status: u64) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        408 | 504 => "timeout_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        500 => "api_error",
        503 | 529 => "overloaded_error",
        s if s >= 500 => "api_error",
        _ => "invalid_request_error",
    }
}

/// The Anthropic error type for an upstream error's HTTP status and type/code string.
///
/// The status decides the class; `kind` only refines a generic server error (500, 502,
/// ...) into an overload or a timeout. Without an error status (an in-stream error),
/// `kind` decides.
pub fn anthropic_error_type(status: Option<u64>, kind: Option<&str>) -> &'static str {
    if let Some(status) = status.filter(|s| (400..=599).contains(s)) {
        let base = status_class(status);
        if base == "api_error" {
            match kind {
                Some("overloaded_error" | "UNAVAILABLE") => return "overloaded_error",
                Some("timeout_error" | "DEADLINE_EXCEEDED") => return "timeout_error",
                _ => {}
            }
        }
        return base;
    }
    if let Some(kind) = kind {
        if let Some(known) = ANTHROPIC_ERROR_TYPES.iter().find(|t| **t == kind) {
            return known;
        }
    }
    match kind {
        Some("rate_limit_exceeded" | "tokens" | "requests") => "rate_limit_error",
        Some("insufficient_quota") => "billing_error",
        Some("invalid_api_key") => "authentication_error",
        Some("model_not_found") => "not_found_error",
        Some("context_length_exceeded") => "invalid_request_error",
        _ => "api_error", // server_error, and any other
    }
}

/// (Anthropic error type, message) for an upstream error payload in any common shape:
/// `{"error": {...}}`, `{"error": "text"}`, a bare error object, or a string.
pub fn upstream_error(payload: &Value) -> (&'static str, String) {
    let err = match payload.get("error") {
        Some(inner) if !inner.is_null() => inner,
        _ => payload,
    };
    let mut status = None;
    let mut kind = None;
    let mut message = None;
    match err {
        Value::String(text) => message = Some(text.as_str()),
        Value::Object(map) => {
            message = map.get("message").and_then(Value::as_str);
            status = ["code", "status_code", "status"]
                .iter()
                .find_map(|key| map.get(*key).and_then(Value::as_u64));
            kind = map
                .get("type")
                .and_then(Value::as_str)
                .or_else(|| map.get("code").and_then(Value::as_str));
        }
        _ => {}
    }
    let message = match message {
        Some(text) if !text.is_empty() => text.to_owned(),
        _ => MSG_UPSTREAM_DEFAULT.to_owned(),
    };
    (anthropic_error_type(status, kind), message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_and_kind_mapping() {
        assert_eq!(anthropic_error_type(Some(429), None), "rate_limit_error");
        assert_eq!(anthropic_error_type(Some(503), None), "overloaded_error");
        assert_eq!(anthropic_error_type(Some(502), None), "api_error");
        assert_eq!(
            anthropic_error_type(Some(418), None),
            "invalid_request_error"
        );
        assert_eq!(
            anthropic_error_type(Some(500), Some("overloaded_error")),
            "overloaded_error"
        );
        assert_eq!(
            anthropic_error_type(None, Some("insufficient_quota")),
            "billing_error"
        );
        assert_eq!(anthropic_error_type(Some(200), Some("weird")), "api_error");
        // the status decides: a generic OpenAI type never moves a 401/403/404 to 400
        for (status, class) in [
            (401, "authentication_error"),
            (403, "permission_error"),
            (404, "not_found_error"),
        ] {
            assert_eq!(
                anthropic_error_type(Some(status), Some("invalid_request_error")),
                class
            );
        }
        assert_eq!(
            anthropic_error_type(Some(400), Some("rate_limit_error")),
            "invalid_request_error"
        );
        assert_eq!(anthropic_error_type(Some(408), None), "timeout_error");
        assert_eq!(
            anthropic_error_type(Some(502), Some("UNAVAILABLE")),
            "overloaded_error"
        );
        assert_eq!(
            anthropic_error_type(Some(503), Some("api_error")),
            "overloaded_error"
        );
    }

    #[test]
    fn payload_shapes() {
        let openrouter = json!({"error": {"code": 400, "message": "Token limit reached"}});
        assert_eq!(
            upstream_error(&openrouter),
            ("invalid_request_error", "Token limit reached".to_owned())
        );
        let openai = json!({"error": {"message": "slow down", "type": "tokens", "code": "rate_limit_exceeded"}});
        assert_eq!(
            upstream_error(&openai),
            ("rate_limit_error", "slow down".to_owned())
        );
        let anthropic = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert_eq!(
            upstream_error(&anthropic),
            ("overloaded_error", "Overloaded".to_owned())
        );
        assert_eq!(
            upstream_error(&json!("boom")),
            ("api_error", "boom".to_owned())
        );
        assert_eq!(
            upstream_error(&json!(42)),
            ("api_error", MSG_UPSTREAM_DEFAULT.to_owned())
        );
    }
}
