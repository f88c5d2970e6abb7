"""The canonical stream (twin of rust/src/stream/): the event model every decoder produces
and every encoder consumes, and their composition into a transducer."""

from __future__ import annotations

# The largest upstream SSE event (or line) a transducer accepts by default.
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
