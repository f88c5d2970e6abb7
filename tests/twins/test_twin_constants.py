"""The twin contract, enforced: Rust and Python define each shared constant once and agree
on it (the native tables come from _native), and every Rust stream module has a Python twin
of the same name."""

from __future__ import annotations

from pathlib import Path

import pytest

from hydra_proxy import errors, stream
from hydra_proxy.anthropic import decoder as anthropic_decoder
from hydra_proxy.chat import decoder as chat_decoder
from hydra_proxy.chat import mapping
from hydra_proxy.config.protocols import PROTOCOLS
from hydra_proxy.responses import errors as responses_errors
from hydra_proxy.responses import items as responses_items
from hydra_proxy.stream import messages
from support.implementations import NATIVE_MISSING, _native

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(autouse=True)
def require_native(request: pytest.FixtureRequest) -> None:
    if _native is None and "native" in request.node.name:
        pytest.skip(NATIVE_MISSING)


def test_native_error_types() -> None:
    native = _native.ANTHROPIC_ERROR_TYPES
    assert len(native) == len(set(native))
    assert set(native) == errors.ANTHROPIC_ERROR_TYPES


def test_native_reason_maps() -> None:
    assert _native.STOP_REASONS == mapping.STOP_REASONS
    assert _native.FINISH_REASONS == mapping.FINISH_REASONS


def test_native_messages() -> None:
    assert _native.MESSAGES == {
        "MSG_INVALID_JSON": messages.MSG_INVALID_JSON,
        "MSG_BAD_SHAPE": messages.MSG_BAD_SHAPE,
        "MSG_CUT_OFF": messages.MSG_CUT_OFF,
        "MSG_CUT_INSIDE_EVENT": messages.MSG_CUT_INSIDE_EVENT,
        "MSG_NOT_EVENT_STREAM": messages.MSG_NOT_EVENT_STREAM,
        "MSG_EVENT_TOO_LARGE": messages.MSG_EVENT_TOO_LARGE,
        "MSG_INTERLEAVED": chat_decoder.MSG_INTERLEAVED,
        "MSG_UNKNOWN_BLOCK": anthropic_decoder.MSG_UNKNOWN_BLOCK,
        "MSG_UPSTREAM_DEFAULT": errors.MSG_UPSTREAM_DEFAULT,
        "MSG_UPSTREAM_FAILED": responses_errors.MSG_UPSTREAM_FAILED,
    }
    assert _native.DEFAULT_MAX_EVENT_BYTES == stream.DEFAULT_MAX_EVENT_BYTES


def test_native_responses_tables() -> None:
    assert _native.RESPONSE_ERROR_CODES == responses_errors.RESPONSE_ERROR_CODES
    assert _native.INCOMPLETE_REASONS == responses_items.INCOMPLETE_REASONS


def test_mapping_functions_use_the_tables() -> None:
    for finish, stop in mapping.STOP_REASONS.items():
        assert mapping.stop_reason(finish, False) == stop
    assert mapping.stop_reason("stop", True) == "tool_use"
    assert mapping.stop_reason(None, False) == "end_turn"
    assert mapping.stop_reason("weird", False) == "end_turn"
    for stop, finish in mapping.FINISH_REASONS.items():
        assert mapping.finish_reason(stop) == finish
    assert mapping.finish_reason(None) == "stop"
    assert mapping.finish_reason("weird") == "stop"


# The stream layer's module names; a protocol package also holds request/response modules
# (pure Python, no Rust twin), which the Python -> Rust direction leaves out.
STREAM_MODULES = {
    "__init__",
    "chunk",
    "decoder",
    "encoder",
    "output",
    "mapping",
    "events",
    "messages",
    "transducer",
}


@pytest.mark.parametrize("package", ["stream", *PROTOCOLS])
def test_every_rust_module_has_a_python_twin(package: str) -> None:
    """Each Rust module of a stream folder has its Python twin of the same name, which
    names it (a Rust module twinning part of a Python one mirrors what the stream needs of
    it, and says so); each Python stream module has its Rust twin."""
    rust = ROOT / "rust" / "src" / package
    python = ROOT / "python" / "hydra_proxy" / package
    for path in sorted(rust.glob("*.rs")):
        twin = python / ("__init__.py" if path.stem == "mod" else f"{path.stem}.py")
        assert twin.is_file(), f"{path.relative_to(ROOT)} has no twin {twin.relative_to(ROOT)}"
        assert path.stem == "mod" or f"rust/src/{package}/{path.name}" in twin.read_text()
    for path in sorted(p for p in python.glob("*.py") if p.stem in STREAM_MODULES):
        twin = rust / ("mod.rs" if path.stem == "__init__" else f"{path.stem}.rs")
        assert twin.is_file(), f"{path.relative_to(ROOT)} has no twin {twin.relative_to(ROOT)}"


# -- Gemini upstream ---------------------------------------------------------------------


def test_native_gemini_tables() -> None:
    from hydra_proxy.gemini import decoder as gemini_decoder
    from hydra_proxy.gemini import mapping as gemini_mapping

    refusal = _native.GEMINI_REFUSAL_FINISH_REASONS
    error = _native.GEMINI_ERROR_FINISH_REASONS
    assert len(refusal) == len(set(refusal)) and len(error) == len(set(error))
    assert frozenset(refusal) == gemini_mapping.REFUSAL_FINISH_REASONS
    assert frozenset(error) == gemini_mapping.ERROR_FINISH_REASONS
    assert _native.MSG_BAD_JSON_PATH == gemini_decoder.MSG_BAD_JSON_PATH


# -- the compositions ------------------------------------------------------------------------


def test_rust_and_python_list_the_same_compositions() -> None:
    import re

    from hydra_proxy import transducers
    from hydra_proxy.config.protocols import PROTOCOLS

    # Every type and class is named by the one name of its protocol: ChatDecoder is the
    # "chat" upstream's, AnthropicViaChatStream the "chat" upstream to the "anthropic" client.
    table = (ROOT / "rust" / "src" / "transducers.rs").read_text()
    rust = {
        (decoder.lower(), encoder.lower()): name
        for name, decoder, encoder in re.findall(
            r"(\w+Stream): (\w+)Decoder => (\w+)Encoder,", table
        )
    }
    python = {key: cls.__name__ for key, cls in transducers.COMPOSITIONS.items()}
    assert len(rust) == 12
    assert rust == python
    for (upstream, client), cls in transducers.COMPOSITIONS.items():
        assert (cls.upstream, cls.client) == (upstream, client)
        assert {upstream, client} <= set(PROTOCOLS)
        assert cls.__name__ == f"{client.title()}Via{upstream.title()}Stream"


def _parameters(cls: object) -> list[tuple[str, object, object]]:
    import inspect

    signature = inspect.signature(cls)  # type: ignore[arg-type]
    return [
        (p.name, p.kind, ... if p.name == "max_event_bytes" else p.default)
        for p in signature.parameters.values()
    ]


def test_native_classes_are_the_compositions_with_their_constructors() -> None:
    from hydra_proxy import transducers

    native = {name for name in dir(_native) if name.endswith("Stream")}
    assert native == {cls.__name__ for cls in transducers.COMPOSITIONS.values()}
    for name in sorted(native):
        python = getattr(transducers, name)
        assert _parameters(getattr(_native, name)) == _parameters(python), name
        assert transducers.native().transducer(python.upstream, python.client).__name__ == name
