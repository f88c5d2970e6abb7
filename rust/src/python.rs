//! The Python module `hydra_proxy._native`: thin PyO3 wrappers over the transducers, with
//! the same API as the pure-Python classes.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::{chat_via_messages, messages_via_chat};

const ANTHROPIC_ERROR_TYPES: [&str; 10] = [
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

fn known_error_type(error_type: &str) -> &'static str {
    ANTHROPIC_ERROR_TYPES
        .iter()
        .find(|t| **t == error_type)
        .copied()
        .unwrap_or("api_error")
}

/// Translate one OpenAI Chat Completions SSE body into Anthropic Messages SSE events.
#[pyclass(module = "hydra_proxy._native")]
struct MessagesViaChatStream {
    inner: messages_via_chat::MessagesViaChatStream,
}

#[pymethods]
impl MessagesViaChatStream {
    #[new]
    #[pyo3(signature = (message_id, model, input_tokens, *, signing_key=None, max_event_bytes=messages_via_chat::DEFAULT_MAX_EVENT_BYTES))]
    fn new(
        message_id: &str,
        model: &str,
        input_tokens: u64,
        signing_key: Option<&[u8]>,
        max_event_bytes: usize,
    ) -> Self {
        MessagesViaChatStream {
            inner: messages_via_chat::MessagesViaChatStream::new(
                message_id,
                model,
                input_tokens,
                signing_key,
                max_event_bytes,
            ),
        }
    }

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
    fn stop_reason(&self) -> Option<&'static str> {
        self.inner.stop_reason()
    }

    #[getter]
    fn usage(&self) -> (u64, u64, u64) {
        self.inner.usage()
    }
}

/// Translate one Anthropic Messages SSE body into OpenAI Chat Completions chunks.
#[pyclass(module = "hydra_proxy._native")]
struct ChatViaMessagesStream {
    inner: chat_via_messages::ChatViaMessagesStream,
}

#[pymethods]
impl ChatViaMessagesStream {
    #[new]
    #[pyo3(signature = (completion_id, model, created, *, include_usage=false, continuation_key=None, max_event_bytes=chat_via_messages::DEFAULT_MAX_EVENT_BYTES))]
    fn new(
        completion_id: &str,
        model: &str,
        created: u64,
        include_usage: bool,
        continuation_key: Option<&[u8]>,
        max_event_bytes: usize,
    ) -> Self {
        ChatViaMessagesStream {
            inner: chat_via_messages::ChatViaMessagesStream::new(
                completion_id,
                model,
                created,
                include_usage,
                continuation_key,
                max_event_bytes,
            ),
        }
    }

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
    fn stop_reason(&self) -> Option<&'static str> {
        self.inner.stop_reason()
    }

    #[getter]
    fn usage(&self) -> (u128, u64, u64) {
        self.inner.usage()
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<MessagesViaChatStream>()?;
    m.add_class::<ChatViaMessagesStream>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
