//! The Python module `hydra_proxy._native`: thin PyO3 wrappers over the transducers, with
//! the same API as the pure-Python classes, and the constant tables both sides must share
//! (tests/test_twin_constants.py compares them with Python's).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::anthropic::{AnthropicDecoder, AnthropicEncoder};
use crate::chat::{ChatDecoder, ChatEncoder};
use crate::errors::ANTHROPIC_ERROR_TYPES;
use crate::gemini::{GeminiDecoder, GeminiEncoder};
use crate::responses::{ResponsesDecoder, ResponsesEncoder};
use crate::stream::{messages, Transducer, DEFAULT_MAX_EVENT_BYTES};
use crate::transducers::{self, Upstream};
use crate::{anthropic, chat, gemini, responses};

fn known_error_type(error_type: &str) -> &'static str {
    ANTHROPIC_ERROR_TYPES
        .iter()
        .find(|t| **t == error_type)
        .copied()
        .unwrap_or("api_error")
}

/// The Python classes of the compositions (transducers::compositions!), with the API of
/// python/hydra_proxy/transducers.py.
macro_rules! classes {
    ($($name:ident: $decoder:ident => $encoder:ident,)*) => {
        $(
            #[doc = concat!(stringify!($decoder), " composed with ", stringify!($encoder), ".")]
            #[pyclass(module = "hydra_proxy._native")]
            struct $name {
                inner: transducers::$name,
            }

            constructor!($name, $decoder, $encoder);
        )*

        fn add_compositions(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add_class::<$name>()?;)*
            Ok(())
        }
    };
}

/// A class's constructor, its client protocol's: the ids and counts its encoder starts
/// from, the key that signs replay state, and the event bound.
macro_rules! constructor {
    ($name:ident, $decoder:ident, AnthropicEncoder) => {
        methods!(
            $name,
            #[pyo3(signature = (message_id, model, input_tokens, *, signing_key=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
            fn new(
                message_id: &str,
                model: &str,
                input_tokens: u64,
                signing_key: Option<&[u8]>,
                max_event_bytes: usize,
            ) -> Self {
                let decoder = $decoder::upstream(message_id, signing_key);
                let encoder = AnthropicEncoder::new(message_id, model, input_tokens);
                $name {
                    inner: Transducer::new(decoder, encoder, max_event_bytes),
                }
            }
        );
    };
    // `message_id` names the decoder's tool calls (default: the completion id).
    ($name:ident, $decoder:ident, ChatEncoder) => {
        methods!(
            $name,
            #[pyo3(signature = (completion_id, model, created, *, include_usage=false, continuation_key=None, message_id=None, signing_key=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
            #[allow(clippy::too_many_arguments)]
            fn new(
                completion_id: &str,
                model: &str,
                created: u64,
                include_usage: bool,
                continuation_key: Option<&[u8]>,
                message_id: Option<&str>,
                signing_key: Option<&[u8]>,
                max_event_bytes: usize,
            ) -> Self {
                let decoder = $decoder::upstream(message_id.unwrap_or(completion_id), signing_key);
                let encoder =
                    ChatEncoder::new(completion_id, model, created, include_usage, continuation_key);
                $name {
                    inner: Transducer::new(decoder, encoder, max_event_bytes),
                }
            }
        );
    };
    ($name:ident, $decoder:ident, ResponsesEncoder) => {
        methods!(
            $name,
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
                let decoder = $decoder::upstream(response_id, signing_key);
                let options =
                    responses_options(echo, include_encrypted, summary, signing_key, tool_names);
                let encoder =
                    ResponsesEncoder::new(response_id, model, created_at, input_tokens, options);
                $name {
                    inner: Transducer::new(decoder, encoder, max_event_bytes),
                }
            }
        );
    };
    ($name:ident, $decoder:ident, GeminiEncoder) => {
        methods!(
            $name,
            #[pyo3(signature = (response_id, model, *, include_thoughts=true, signing_key=None, max_event_bytes=DEFAULT_MAX_EVENT_BYTES))]
            fn new(
                response_id: &str,
                model: &str,
                include_thoughts: bool,
                signing_key: Option<&[u8]>,
                max_event_bytes: usize,
            ) -> Self {
                let decoder = $decoder::upstream(response_id, signing_key);
                let encoder = GeminiEncoder::new(response_id, model, include_thoughts, signing_key);
                $name {
                    inner: Transducer::new(decoder, encoder, max_event_bytes),
                }
            }
        );
    };
}

/// The methods of every class: its constructor `$new` and the transducer's API, with the
/// getters that return the transducer's value as it is.
macro_rules! methods {
    ($name:ident, $new:item) => {
        methods!(
            @ $name,
            $new,
            finished: bool,
            complete: bool,
            has_content: bool,
            buffered_bytes: usize,
            reasoning_tokens: u64
        );
    };
    (@ $name:ident, $new:item, $($getter:ident: $type:ty),*) => {
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
            fn error(&self) -> Option<(&'static str, String)> {
                self.inner.error().map(|(t, m)| (t, m.to_owned()))
            }

            #[getter]
            fn stop_reason(&self) -> Option<String> {
                self.inner.stop_reason().map(str::to_owned)
            }

            /// The client protocol's token counts.
            #[getter]
            fn usage(&self) -> (u128, u64, u64) {
                let (input, cached, output) = self.inner.usage();
                (input.into(), cached, output)
            }

            $(
                #[getter]
                fn $getter(&self) -> $type {
                    self.inner.$getter()
                }
            )*
        }
    };
}

transducers::compositions!(classes);

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

fn table<'py>(py: Python<'py>, pairs: &[(&str, &str)]) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, value) in pairs {
        dict.set_item(key, value)?;
    }
    Ok(dict)
}

/// Whether the JSON text `data` (parsed already) nests more than `limit` levels deep.
#[pyfunction]
fn json_nested_deeper_than(data: &[u8], limit: usize) -> bool {
    crate::json::depth::nested_deeper_than(data, limit)
}

/// The array under `key` of the JSON object `data`: the offsets of its brackets and of its
/// elements (flattened start, end pairs), and its depth; None where the split is not plain.
#[pyfunction]
fn json_member_elements(data: &[u8], key: &[u8]) -> Option<(usize, usize, Vec<usize>, usize)> {
    crate::json::spans::member_elements(data, key)
}

/// How many leading elements of `now` are byte-equal to those of `before` (offsets as
/// `json_member_elements` gives them).
#[pyfunction]
fn json_same_leading(
    before: &[u8],
    before_at: Vec<usize>,
    now: &[u8],
    now_at: Vec<usize>,
) -> usize {
    crate::json::spans::same_leading(before, &before_at, now, &now_at)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    add_compositions(m)?;
    m.add_function(wrap_pyfunction!(json_nested_deeper_than, m)?)?;
    m.add_function(wrap_pyfunction!(json_member_elements, m)?)?;
    m.add_function(wrap_pyfunction!(json_same_leading, m)?)?;
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
            responses::errors::MSG_UPSTREAM_FAILED,
        ),
    ];
    m.add("MESSAGES", table(py, &messages)?)?;
    let refusals = gemini::mapping::REFUSAL_FINISH_REASONS.to_vec();
    m.add("GEMINI_REFUSAL_FINISH_REASONS", refusals)?;
    let errors = gemini::mapping::ERROR_FINISH_REASONS.to_vec();
    m.add("GEMINI_ERROR_FINISH_REASONS", errors)?;
    m.add("MSG_BAD_JSON_PATH", gemini::decoder::MSG_BAD_JSON_PATH)?;
    let statuses = PyDict::new(py);
    for (kind, code, status) in gemini::output::ERROR_STATUSES {
        statuses.set_item(kind, (code, status))?;
    }
    m.add("GEMINI_ERROR_STATUSES", statuses)?;
    let finishes = table(py, &gemini::output::FINISH_REASONS)?;
    m.add("GEMINI_FINISH_REASONS", finishes)?;
    let codes = responses::errors::RESPONSE_ERROR_CODES;
    m.add("RESPONSE_ERROR_CODES", table(py, &codes)?)?;
    let reasons = responses::items::INCOMPLETE_REASONS;
    m.add("INCOMPLETE_REASONS", table(py, &reasons)?)?;
    Ok(())
}
