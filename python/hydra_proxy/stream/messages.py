"""Error messages every decoder uses (twin of rust/src/stream/messages.rs); protocol-specific
ones live in their decoder."""

from __future__ import annotations

MSG_INVALID_JSON = "the upstream sent an event that is not valid JSON"
MSG_BAD_SHAPE = "the upstream sent an event of an unexpected shape"
MSG_CUT_OFF = "the upstream stream ended before the response was complete"
# EOF with part of an event buffered (no blank line ended it): the connection was cut.
MSG_CUT_INSIDE_EVENT = "the upstream stream was cut off in the middle of an event"
# A line that is no SSE field (an HTML page, binary) in a `text/event-stream` body.
MSG_NOT_EVENT_STREAM = "the upstream sent bytes that are not an event stream"
# One event's buffered bytes past the bound; `{}` is the bound.
MSG_EVENT_TOO_LARGE = "an upstream event exceeds the max_event_bytes bound of {} bytes"
