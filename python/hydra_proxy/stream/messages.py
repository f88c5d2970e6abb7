"""Error messages every decoder uses (twin of rust/src/stream/messages.rs); protocol-specific
ones live in their decoder."""

from __future__ import annotations

MSG_INVALID_JSON = "the upstream sent an event that is not valid JSON"
MSG_BAD_SHAPE = "the upstream sent an event of an unexpected shape"
MSG_CUT_OFF = "the upstream stream ended before the response was complete"
