"""Fixtures shared by every test folder. The test modules import their helpers from the
package beside this file (`support.implementations`, `support.servers`, ...), never from here."""

from __future__ import annotations

import pytest

from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native


@pytest.fixture(params=IMPLEMENTATIONS)
def impl(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    return name
