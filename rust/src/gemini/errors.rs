//! Gemini's error objects (twin of python/hydra_proxy/gemini/errors.py): the Anthropic error
//! of an `error` chunk an upstream streams.

use serde_json::Value;

use super::decoder::is_py_space;
use crate::errors::anthropic_error_type;

const MAX_ERROR_MESSAGE: usize = 2000;
const AUTH_REASONS: [&str; 3] = ["API_KEY_INVALID", "API_KEY_EXPIRED", "ACCESS_TOKEN_EXPIRED"];

/// (Anthropic error type, message) of a chunk's Gemini `error` object
/// (hydra_proxy.gemini.errors.gemini_error).
pub fn gemini_error(value: &Value) -> (&'static str, String) {
    let error = value.get("error").unwrap_or(&Value::Null);
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .filter(|code| (400..=599).contains(code))
        .unwrap_or(500);
    let auth = status == 400
        && error
            .get("details")
            .and_then(Value::as_array)
            .is_some_and(|details| {
                details.iter().any(|detail| {
                    detail.get("@type").and_then(Value::as_str)
                        == Some("type.googleapis.com/google.rpc.ErrorInfo")
                        && detail
                            .get("reason")
                            .and_then(Value::as_str)
                            .is_some_and(|reason| AUTH_REASONS.contains(&reason))
                })
            });
    let kind = if auth {
        "authentication_error"
    } else {
        anthropic_error_type(Some(status), None)
    };
    let message = match error.get("message").and_then(Value::as_str) {
        Some(message) if !message.trim_matches(is_py_space).is_empty() => message.to_owned(),
        _ => {
            let mut message = format!("Gemini returned HTTP {status}");
            if let Some(state) = error.get("status").and_then(Value::as_str) {
                message.push(' ');
                message.push_str(state);
            }
            message
        }
    };
    (kind, message.chars().take(MAX_ERROR_MESSAGE).collect())
}
