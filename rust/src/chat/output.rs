//! OpenAI Chat Completions stream chunks, as bytes (twin of python/hydra_proxy/chat/output.py).
//! The fixed part of a chunk (id, created, model) is rendered once per stream.

use crate::json::write::{write_str, write_u128, write_u64};

pub const DONE: &[u8] = b"data: [DONE]\n\n";
pub const PING: &[u8] = b": ping\n\n";

const OPEN: &[u8] = b",\"finish_reason\":null}]}\n\n";

pub struct ChunkWriter {
    head: Vec<u8>,
    usage_head: Vec<u8>,
}

impl ChunkWriter {
    pub fn new(completion_id: &str, model: &str, created: u64) -> Self {
        let mut common = b"{\"id\":".to_vec();
        write_str(&mut common, completion_id);
        common.extend_from_slice(b",\"object\":\"chat.completion.chunk\",\"created\":");
        write_u64(&mut common, created);
        common.extend_from_slice(b",\"model\":");
        write_str(&mut common, model);
        common.push(b',');
        let mut head = b"data: ".to_vec();
        head.extend_from_slice(&common);
        head.extend_from_slice(b"\"choices\":[{\"index\":0,\"delta\":");
        let mut usage_head = b"data: ".to_vec();
        usage_head.extend_from_slice(&common);
        usage_head.extend_from_slice(b"\"choices\":[],\"usage\":");
        ChunkWriter { head, usage_head }
    }

    /// A chunk of the open choice: its delta written by `delta`.
    #[inline]
    fn delta(&self, out: &mut Vec<u8>, delta: impl FnOnce(&mut Vec<u8>)) {
        out.extend_from_slice(&self.head);
        delta(out);
        out.extend_from_slice(OPEN);
    }

    pub fn role(&self, out: &mut Vec<u8>) {
        self.delta(out, |out| {
            out.extend_from_slice(b"{\"role\":\"assistant\",\"content\":\"\"}");
        });
    }

    pub fn content(&self, out: &mut Vec<u8>, text: &str) {
        self.delta(out, |out| string_member(out, b"{\"content\":", text, b"}"));
    }

    pub fn reasoning(&self, out: &mut Vec<u8>, text: &str) {
        self.delta(out, |out| {
            string_member(out, b"{\"reasoning_content\":", text, b"}");
        });
    }

    pub fn tool_start(&self, out: &mut Vec<u8>, index: u64, id: &str, name: &str) {
        self.delta(out, |out| {
            tool_call(out, index);
            string_member(
                out,
                b",\"id\":",
                id,
                b",\"type\":\"function\",\"function\":{\"name\":",
            );
            write_str(out, name);
            out.extend_from_slice(b",\"arguments\":\"\"}}]}");
        });
    }

    pub fn tool_arguments(&self, out: &mut Vec<u8>, index: u64, arguments: &str) {
        self.delta(out, |out| {
            tool_call(out, index);
            string_member(out, b",\"function\":{\"arguments\":", arguments, b"}}]}");
        });
    }

    /// `url_citation` annotations: (start, end, url, title) each, offsets in code points
    /// of `content` (the non-streamed reply's layout).
    pub fn annotations(
        &self,
        out: &mut Vec<u8>,
        start: u64,
        end: u64,
        citations: &[(String, String)],
    ) {
        self.delta(out, |out| {
            out.extend_from_slice(b"{\"annotations\":[");
            for (i, (url, title)) in citations.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(
                    b"{\"type\":\"url_citation\",\"url_citation\":{\"start_index\":",
                );
                write_u64(out, start);
                out.extend_from_slice(b",\"end_index\":");
                write_u64(out, end);
                string_member(out, b",\"url\":", url, b",\"title\":");
                write_str(out, title);
                out.extend_from_slice(b"}}");
            }
            out.extend_from_slice(b"]}");
        });
    }

    pub fn finish(&self, out: &mut Vec<u8>, finish_reason: &str) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(b"{},\"finish_reason\":\"");
        out.extend_from_slice(finish_reason.as_bytes());
        out.extend_from_slice(b"\"}]}\n\n");
    }

    pub fn usage(&self, out: &mut Vec<u8>, prompt: u128, completion: u64, cached: u64) {
        out.extend_from_slice(&self.usage_head);
        out.extend_from_slice(b"{\"prompt_tokens\":");
        write_u128(out, prompt);
        out.extend_from_slice(b",\"completion_tokens\":");
        write_u64(out, completion);
        out.extend_from_slice(b",\"total_tokens\":");
        write_u128(out, prompt + u128::from(completion));
        out.extend_from_slice(b",\"prompt_tokens_details\":{\"cached_tokens\":");
        write_u64(out, cached);
        out.extend_from_slice(b"}}}\n\n");
    }
}

/// `{"tool_calls":[{"index":N` of a tool call's delta.
fn tool_call(out: &mut Vec<u8>, index: u64) {
    out.extend_from_slice(b"{\"tool_calls\":[{\"index\":");
    write_u64(out, index);
}

/// `head`, `text` as a JSON string, then `tail`.
#[inline]
fn string_member(out: &mut Vec<u8>, head: &[u8], text: &str, tail: &[u8]) {
    out.extend_from_slice(head);
    write_str(out, text);
    out.extend_from_slice(tail);
}

/// An OpenAI-style error chunk: the openai SDK raises on it, Zed reports it.
pub fn error(out: &mut Vec<u8>, error_type: &str, message: &str) {
    out.extend_from_slice(b"data: {\"error\":{\"message\":");
    write_str(out, message);
    out.extend_from_slice(b",\"type\":\"");
    out.extend_from_slice(error_type.as_bytes());
    out.extend_from_slice(b"\",\"param\":null,\"code\":null}}\n\n");
}
