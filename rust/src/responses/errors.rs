//! Failures in the Responses error shapes (twin of python/hydra_proxy/responses/errors.py):
//! the error code a client is told, and the Anthropic error of an upstream's failure.

/// Anthropic error type -> `ResponseError.code` (responses.errors.RESPONSE_ERROR_CODES).
pub const RESPONSE_ERROR_CODES: [(&str, &str); 3] = [
    ("rate_limit_error", "rate_limit_exceeded"),
    ("invalid_request_error", "invalid_prompt"),
    ("request_too_large", "invalid_prompt"),
];

pub fn response_error_code(error_type: &str) -> &'static str {
    RESPONSE_ERROR_CODES
        .iter()
        .find(|(kind, _)| *kind == error_type)
        .map_or("server_error", |(_, code)| *code)
}

/// The default message of a failed upstream response (responses.errors.MSG_UPSTREAM_FAILED).
pub const MSG_UPSTREAM_FAILED: &str = "the upstream failed to generate a response";

/// (Anthropic error type, message) of a Responses `error` object
/// (responses.errors.upstream_failure).
pub fn upstream_failure(code: Option<&str>, message: Option<&str>) -> (&'static str, String) {
    let error_type = match code {
        None | Some("server_error") => "api_error",
        Some("rate_limit_exceeded") => "rate_limit_error",
        Some("vector_store_timeout") => "timeout_error",
        Some(_) => "invalid_request_error",
    };
    let message = message
        .filter(|m| !m.is_empty())
        .unwrap_or(MSG_UPSTREAM_FAILED);
    (error_type, message.to_owned())
}
