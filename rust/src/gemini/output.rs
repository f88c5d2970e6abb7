//! Gemini `streamGenerateContent?alt=sse` chunks, as bytes (twin of
//! python/hydra_proxy/gemini/output.py, which documents them), and the Gemini error shape.

use crate::json::write::{write_str, write_u128, write_u64};

/// Anthropic error type -> (HTTP code, google.rpc status) (gemini.output.ERROR_STATUSES).
pub const ERROR_STATUSES: [(&str, u16, &str); 10] = [
    ("invalid_request_error", 400, "INVALID_ARGUMENT"),
    ("authentication_error", 401, "UNAUTHENTICATED"),
    ("billing_error", 400, "FAILED_PRECONDITION"),
    ("permission_error", 403, "PERMISSION_DENIED"),
    ("not_found_error", 404, "NOT_FOUND"),
    ("request_too_large", 413, "INVALID_ARGUMENT"),
    ("rate_limit_error", 429, "RESOURCE_EXHAUSTED"),
    ("api_error", 500, "INTERNAL"),
    ("timeout_error", 504, "DEADLINE_EXCEEDED"),
    ("overloaded_error", 503, "UNAVAILABLE"),
];

/// Anthropic stop_reason -> Gemini finishReason, anything else STOP
/// (gemini.output.FINISH_REASONS).
pub const FINISH_REASONS: [(&str, &str); 3] = [
    ("max_tokens", "MAX_TOKENS"),
    ("model_context_window_exceeded", "MAX_TOKENS"),
    ("refusal", "SAFETY"),
];

pub fn finish_reason(stop_reason: Option<&str>) -> &'static str {
    let reason = stop_reason.unwrap_or("");
    FINISH_REASONS
        .iter()
        .find(|(stop, _)| *stop == reason)
        .map_or("STOP", |(_, finish)| *finish)
}

fn error_status(error_type: &str) -> (u16, &'static str) {
    ERROR_STATUSES
        .iter()
        .find(|(kind, _, _)| *kind == error_type)
        .map_or((500, "INTERNAL"), |(_, code, status)| (*code, *status))
}

/// A Gemini error chunk: the google-genai SDKs raise on it.
pub fn error_chunk(out: &mut Vec<u8>, error_type: &str, message: &str) {
    let (code, status) = error_status(error_type);
    out.extend_from_slice(b"data: {\"error\":{\"code\":");
    write_u64(out, u64::from(code));
    out.extend_from_slice(b",\"message\":");
    write_str(out, message);
    out.extend_from_slice(b",\"status\":\"");
    out.extend_from_slice(status.as_bytes());
    out.extend_from_slice(b"\"}}\r\n\r\n");
}

const HEAD: &[u8] = b"data: {\"candidates\":[{\"content\":{\"parts\":[";

pub struct ChunkWriter {
    tail: Vec<u8>,
}

impl ChunkWriter {
    pub fn new(response_id: &str, model: &str) -> Self {
        let mut tail = b",\"modelVersion\":".to_vec();
        write_str(&mut tail, model);
        tail.extend_from_slice(b",\"responseId\":");
        write_str(&mut tail, response_id);
        tail.extend_from_slice(b"}\r\n\r\n");
        ChunkWriter { tail }
    }

    /// A chunk of one content part, written by `part`.
    pub fn part(&self, out: &mut Vec<u8>, part: impl FnOnce(&mut Vec<u8>)) {
        out.extend_from_slice(HEAD);
        part(out);
        out.extend_from_slice(b"],\"role\":\"model\"},\"index\":0}]");
        out.extend_from_slice(&self.tail);
    }

    /// The final chunk: an empty text part (with the waiting signature), the finishReason
    /// and the usageMetadata.
    pub fn last(&self, out: &mut Vec<u8>, signature: Option<&str>, reason: &str, usage: Counts) {
        out.extend_from_slice(HEAD);
        text_part(out, "", signature, false);
        out.extend_from_slice(b"],\"role\":\"model\"},\"finishReason\":\"");
        out.extend_from_slice(reason.as_bytes());
        out.extend_from_slice(b"\",\"index\":0}],\"usageMetadata\":");
        usage_metadata(out, usage);
        out.extend_from_slice(&self.tail);
    }
}

/// (prompt, cached, candidates, thoughts) token counts.
pub type Counts = (u128, u64, u64, u64);

pub fn text_part(out: &mut Vec<u8>, text: &str, signature: Option<&str>, thought: bool) {
    out.extend_from_slice(b"{\"text\":");
    write_str(out, text);
    if thought {
        out.extend_from_slice(b",\"thought\":true");
    }
    signature_member(out, signature);
    out.push(b'}');
}

pub fn call_part(out: &mut Vec<u8>, id: &str, name: &str, args: &str, signature: Option<&str>) {
    out.extend_from_slice(b"{\"functionCall\":{\"id\":");
    write_str(out, id);
    out.extend_from_slice(b",\"name\":");
    write_str(out, name);
    out.extend_from_slice(b",\"args\":");
    out.extend_from_slice(args.as_bytes());
    out.push(b'}');
    signature_member(out, signature);
    out.push(b'}');
}

fn signature_member(out: &mut Vec<u8>, signature: Option<&str>) {
    if let Some(signature) = signature {
        out.extend_from_slice(b",\"thoughtSignature\":\"");
        out.extend_from_slice(signature.as_bytes());
        out.push(b'"');
    }
}

fn usage_metadata(out: &mut Vec<u8>, (prompt, cached, candidates, thoughts): Counts) {
    out.extend_from_slice(b"{\"promptTokenCount\":");
    write_u128(out, prompt);
    out.extend_from_slice(b",\"candidatesTokenCount\":");
    write_u64(out, candidates);
    if cached > 0 {
        out.extend_from_slice(b",\"cachedContentTokenCount\":");
        write_u64(out, cached);
    }
    if thoughts > 0 {
        out.extend_from_slice(b",\"thoughtsTokenCount\":");
        write_u64(out, thoughts);
    }
    out.extend_from_slice(b",\"totalTokenCount\":");
    write_u128(out, prompt + u128::from(candidates) + u128::from(thoughts));
    out.push(b'}');
}
