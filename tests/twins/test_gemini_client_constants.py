"""The Gemini encoder's tables are the same in both implementations (the native module
exports its own), and its error shape is the one the google-genai SDK raises on."""

from __future__ import annotations

import pytest

from hydra_proxy.errors import ANTHROPIC_ERROR_TYPES
from hydra_proxy.gemini import output
from support.implementations import NATIVE_MISSING, _native


def test_error_statuses_cover_every_error_type() -> None:
    assert set(output.ERROR_STATUSES) == set(ANTHROPIC_ERROR_TYPES)
    assert output.error_body("rate_limit_error", "slow").startswith(b'{"error":')


@pytest.mark.skipif(_native is None, reason=NATIVE_MISSING)
def test_native_tables_are_python_tables() -> None:
    assert _native is not None
    native = {k: tuple(v) for k, v in _native.GEMINI_ERROR_STATUSES.items()}
    assert native == output.ERROR_STATUSES
    assert dict(_native.GEMINI_FINISH_REASONS) == output.FINISH_REASONS
