//! The Python module `hydra_proxy._native`: thin PyO3 wrappers over the transducers, with
//! the same API as the pure-Python classes, and the constant tables both sides must share
//! (tests/test_twin_constants.py compares them with Python's).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::errors::ANTHROPIC_ERROR_TYPES;
use crate::stream::{messages, DEFAULT_MAX_EVENT_BYTES};
use crate::{anthropic, chat, gemini, responses, transducers};

fn known_error_type(error_type: &str) -> &'static str {
    ANTHROPIC_ERROR_TYPES
        .iter()
        .find(|t| **t == error_type)
        .copied()
        .unwrap_or("api_error")
}

/// The same wrapper for every transducer type: the API of python/hydra_proxy/transducers.py.
macro_rules! transducer_methods {
    ($name:ident, $usage:ty, $new:item) => {
        #[pymethods]
        impl $name {
            #[new]
            $new
            fn feed<'py>(&mut self, py: Python<'py>, chunk: &[u8]) -> Bound<'py, PyBytes> {
                PyBytes::new(py, self.inner.feed(chunk))
            }

            fn finish<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
                PyBytes::new(py, self.inner.finish())
            }

            fn ping<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
                PyBytes::new(py, self.inner.ping())
            }

            fn fail<'py>(
                &mut self,
                py: Python<'py>,
                error_type: &str,
                message: &str,
            ) -> Bound<'py, PyBytes> {
                PyBytes::new(py, self.inner.fail(known_error_type(error_type), message))
            }

            #[getter]
            fn finished(&self) -> bool {
                self.inner.finished()
            }

            #[getter]
            fn complete(&self) -> bool {
                self.inner.complete()
            }

            #[getter]
            fn error(&self) -> Option<(&'static str, String)> {
                self.inner.error().map(|(t, m)| (t, m.to_owned()))
            }

            #[getter]
            fn has_content(&self) -> bool {
                self.inner.has_content()
            }

            #[getter]
            fn stop_reason(&self) -> Option<String> {
                self.inner.stop_reason().map(str::to_owned)
            }

            #[getter]
            fn usage(&self) -> $usage {
                self.inner.usage()
            }

            #[getter]
            fn buffered_bytes(&self) -> usize {
                self.inner.buffered_bytes()
            }

            #[getter]
            fn reasoning_tokens(&self) -> u64 {
                self.inner.reasoning_tokens()
            }
        }
    };
}

/// Translate one OpenAI Chat Completions SSE body into Anthropic Messages SSE events.
#[pyclass(module = "hydra_proxy._native")]
struct MessagesViaChatStream {
    inner: transducers::MessagesViaChatStream,
}

transducer_methods!(
    MessagesViaChatStream,
    (u64, u64, u64),
    #[pyo3(signature = (message_id, model, input_tokens, *, signing_key=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
    fn new(
        message_id: &str,
        model: &str,
        input_tokens: u64,
        signing_key: Option<&[u8]>,
        max_event_bytes: usize,
    ) -> Self {
        MessagesViaChatStream {
            inner: transducers::messages_via_chat(
                message_id,
                model,
                input_tokens,
                signing_key,
                max_event_bytes,
            ),
        }
    }
);

/// Translate one Anthropic Messages SSE body into OpenAI Chat Completions chunks.
#[pyclass(module = "hydra_proxy._native")]
struct ChatViaMessagesStream {
    inner: transducers::ChatViaMessagesStream,
}

transducer_methods!(
    ChatViaMessagesStream,
    (u128, u64, u64),
    #[pyo3(signature = (completion_id, model, created, *, include_usage=false, continuation_key=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
    fn new(
        completion_id: &str,
        model: &str,
        created: u64,
        include_usage: bool,
        continuation_key: Option<&[u8]>,
        max_event_bytes: usize,
    ) -> Self {
        ChatViaMessagesStream {
            inner: transducers::chat_via_messages(
                completion_id,
                model,
                created,
                include_usage,
                continuation_key,
                max_event_bytes,
            ),
        }
    }
);

// -- Gemini upstream -----------------------------------------------------------------------

/// Translate one Gemini streamGenerateContent SSE body into Anthropic Messages SSE events.
#[pyclass(module = "hydra_proxy._native")]
struct MessagesViaGeminiStream {
    inner: transducers::MessagesViaGeminiStream,
}

transducer_methods!(
    MessagesViaGeminiStream,
    (u64, u64, u64),
    #[pyo3(signature = (message_id, model, input_tokens, *, signing_key=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
    fn new(
        message_id: &str,
        model: &str,
        input_tokens: u64,
        signing_key: Option<&[u8]>,
        max_event_bytes: usize,
    ) -> Self {
        MessagesViaGeminiStream {
            inner: transducers::messages_via_gemini(
                message_id,
                model,
                input_tokens,
                signing_key,
                max_event_bytes,
            ),
        }
    }
);

/// Translate one Gemini streamGenerateContent SSE body into OpenAI Chat Completions chunks.
#[pyclass(module = "hydra_proxy._native")]
struct ChatViaGeminiStream {
    inner: transducers::ChatViaGeminiStream,
}

transducer_methods!(
    ChatViaGeminiStream,
    (u128, u64, u64),
    #[pyo3(signature = (completion_id, model, created, *, message_id, include_usage=false, signing_key=None, continuation_key=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        completion_id: &str,
        model: &str,
        created: u64,
        message_id: &str,
        include_usage: bool,
        signing_key: Option<&[u8]>,
        continuation_key: Option<&[u8]>,
        max_event_bytes: usize,
    ) -> Self {
        ChatViaGeminiStream {
            inner: transducers::chat_via_gemini(
                completion_id,
                model,
                created,
                message_id,
                include_usage,
                signing_key,
                continuation_key,
                max_event_bytes,
            ),
        }
    }
);

/// The Gemini classes and tables of the module (tests/test_twin_constants.py).
fn add_gemini(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<MessagesViaGeminiStream>()?;
    m.add_class::<ChatViaGeminiStream>()?;
    m.add(
        "GEMINI_REFUSAL_FINISH_REASONS",
        gemini::mapping::REFUSAL_FINISH_REASONS.to_vec(),
    )?;
    m.add(
        "GEMINI_ERROR_FINISH_REASONS",
        gemini::mapping::ERROR_FINISH_REASONS.to_vec(),
    )?;
    m.add("MSG_BAD_JSON_PATH", gemini::decoder::MSG_BAD_JSON_PATH)?;
    Ok(())
}

// -- OpenAI Responses clients (issue 10) ----------------------------------------------------

/// (sent name, client name, namespace, custom): responses.encoder.NameTable.
type NameTable = Vec<(String, String, Option<String>, bool)>;

fn responses_options<'a>(
    echo: &'a str,
    include_encrypted: bool,
    summary: bool,
    signing_key: Option<&'a [u8]>,
    tool_names: Option<NameTable>,
) -> responses::ResponsesOptions<'a> {
    let tool_names = tool_names
        .unwrap_or_default()
        .into_iter()
        .map(|(sent, name, namespace, custom)| {
            let origin = responses::ToolOrigin {
                name,
                namespace,
                custom,
            };
            (sent, origin)
        })
        .collect();
    responses::ResponsesOptions {
        echo,
        include_encrypted,
        summary,
        signing_key,
        tool_names,
    }
}

/// Translate one OpenAI Chat Completions SSE body into OpenAI Responses SSE events.
#[pyclass(module = "hydra_proxy._native")]
struct ResponsesViaChatStream {
    inner: transducers::ResponsesViaChatStream,
}

transducer_methods!(
    ResponsesViaChatStream,
    (u128, u64, u64),
    #[pyo3(signature = (response_id, model, created_at, input_tokens, *, echo="{}", include_encrypted=false, summary=false, signing_key=None, tool_names=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        response_id: &str,
        model: &str,
        created_at: u64,
        input_tokens: u64,
        echo: &str,
        include_encrypted: bool,
        summary: bool,
        signing_key: Option<&[u8]>,
        tool_names: Option<NameTable>,
        max_event_bytes: usize,
    ) -> Self {
        let options = responses_options(echo, include_encrypted, summary, signing_key, tool_names);
        ResponsesViaChatStream {
            inner: transducers::responses_via_chat(
                response_id,
                model,
                created_at,
                input_tokens,
                options,
                max_event_bytes,
            ),
        }
    }
);

/// Translate one Gemini streamGenerateContent SSE body into OpenAI Responses SSE events.
#[pyclass(module = "hydra_proxy._native")]
struct ResponsesViaGeminiStream {
    inner: transducers::ResponsesViaGeminiStream,
}

transducer_methods!(
    ResponsesViaGeminiStream,
    (u128, u64, u64),
    #[pyo3(signature = (response_id, model, created_at, input_tokens, *, echo="{}", include_encrypted=false, summary=false, signing_key=None, tool_names=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        response_id: &str,
        model: &str,
        created_at: u64,
        input_tokens: u64,
        echo: &str,
        include_encrypted: bool,
        summary: bool,
        signing_key: Option<&[u8]>,
        tool_names: Option<NameTable>,
        max_event_bytes: usize,
    ) -> Self {
        let options = responses_options(echo, include_encrypted, summary, signing_key, tool_names);
        ResponsesViaGeminiStream {
            inner: transducers::responses_via_gemini(
                response_id,
                model,
                created_at,
                input_tokens,
                options,
                max_event_bytes,
            ),
        }
    }
);

/// Translate one Anthropic Messages SSE body into OpenAI Responses SSE events.
#[pyclass(module = "hydra_proxy._native")]
struct ResponsesViaMessagesStream {
    inner: transducers::ResponsesViaMessagesStream,
}

transducer_methods!(
    ResponsesViaMessagesStream,
    (u128, u64, u64),
    #[pyo3(signature = (response_id, model, created_at, input_tokens, *, echo="{}", include_encrypted=false, summary=false, signing_key=None, tool_names=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        response_id: &str,
        model: &str,
        created_at: u64,
        input_tokens: u64,
        echo: &str,
        include_encrypted: bool,
        summary: bool,
        signing_key: Option<&[u8]>,
        tool_names: Option<NameTable>,
        max_event_bytes: usize,
    ) -> Self {
        let options = responses_options(echo, include_encrypted, summary, signing_key, tool_names);
        ResponsesViaMessagesStream {
            inner: transducers::responses_via_messages(
                response_id,
                model,
                created_at,
                input_tokens,
                options,
                max_event_bytes,
            ),
        }
    }
);

// -- OpenAI Responses upstreams (the `responses` provider kind, issue 10) -------------------

/// Translate one OpenAI Responses SSE body into Anthropic Messages SSE events.
#[pyclass(module = "hydra_proxy._native")]
struct MessagesViaResponsesStream {
    inner: transducers::MessagesViaResponsesStream,
}

transducer_methods!(
    MessagesViaResponsesStream,
    (u64, u64, u64),
    #[pyo3(signature = (message_id, model, input_tokens, *, signing_key=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
    fn new(
        message_id: &str,
        model: &str,
        input_tokens: u64,
        signing_key: Option<&[u8]>,
        max_event_bytes: usize,
    ) -> Self {
        MessagesViaResponsesStream {
            inner: transducers::messages_via_responses(
                message_id,
                model,
                input_tokens,
                signing_key,
                max_event_bytes,
            ),
        }
    }
);

/// Translate one OpenAI Responses SSE body into OpenAI Chat Completions chunks.
#[pyclass(module = "hydra_proxy._native")]
struct ChatViaResponsesStream {
    inner: transducers::ChatViaResponsesStream,
}

transducer_methods!(
    ChatViaResponsesStream,
    (u128, u64, u64),
    #[pyo3(signature = (completion_id, model, created, *, include_usage=false, continuation_key=None, signing_key=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
    fn new(
        completion_id: &str,
        model: &str,
        created: u64,
        include_usage: bool,
        continuation_key: Option<&[u8]>,
        signing_key: Option<&[u8]>,
        max_event_bytes: usize,
    ) -> Self {
        ChatViaResponsesStream {
            inner: transducers::chat_via_responses(
                completion_id,
                model,
                created,
                include_usage,
                continuation_key,
                signing_key,
                max_event_bytes,
            ),
        }
    }
);

/// The Responses classes and tables of the module (tests/test_twin_constants.py).
fn add_responses(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<ResponsesViaChatStream>()?;
    m.add_class::<ResponsesViaMessagesStream>()?;
    m.add_class::<ResponsesViaGeminiStream>()?;
    m.add_class::<MessagesViaResponsesStream>()?;
    m.add_class::<ChatViaResponsesStream>()?;
    let codes = responses::shared::RESPONSE_ERROR_CODES;
    m.add("RESPONSE_ERROR_CODES", table(py, &codes)?)?;
    let reasons = responses::shared::INCOMPLETE_REASONS;
    m.add("INCOMPLETE_REASONS", table(py, &reasons)?)?;
    Ok(())
}

// -- end of OpenAI Responses ----------------------------------------------------------------

fn table<'py>(py: Python<'py>, pairs: &[(&str, &str)]) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, value) in pairs {
        dict.set_item(key, value)?;
    }
    Ok(dict)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<MessagesViaChatStream>()?;
    m.add_class::<ChatViaMessagesStream>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_MAX_EVENT_BYTES", DEFAULT_MAX_EVENT_BYTES)?;
    m.add("ANTHROPIC_ERROR_TYPES", ANTHROPIC_ERROR_TYPES.to_vec())?;
    m.add("STOP_REASONS", table(py, &chat::mapping::STOP_REASONS)?)?;
    m.add("FINISH_REASONS", table(py, &chat::mapping::FINISH_REASONS)?)?;
    let messages = [
        ("MSG_INVALID_JSON", messages::MSG_INVALID_JSON),
        ("MSG_BAD_SHAPE", messages::MSG_BAD_SHAPE),
        ("MSG_CUT_OFF", messages::MSG_CUT_OFF),
        ("MSG_CUT_INSIDE_EVENT", messages::MSG_CUT_INSIDE_EVENT),
        ("MSG_NOT_EVENT_STREAM", messages::MSG_NOT_EVENT_STREAM),
        ("MSG_EVENT_TOO_LARGE", messages::MSG_EVENT_TOO_LARGE),
        ("MSG_INTERLEAVED", chat::decoder::MSG_INTERLEAVED),
        ("MSG_UNKNOWN_BLOCK", anthropic::decoder::MSG_UNKNOWN_BLOCK),
        ("MSG_UPSTREAM_DEFAULT", crate::errors::MSG_UPSTREAM_DEFAULT),
        (
            "MSG_UPSTREAM_FAILED",
            responses::shared::MSG_UPSTREAM_FAILED,
        ),
    ];
    m.add("MESSAGES", table(py, &messages)?)?;
    add_gemini(m)?;
    add_responses(m)?;
    Ok(())
}
