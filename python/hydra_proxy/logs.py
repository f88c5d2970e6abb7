"""Log lines a client cannot forge: control characters escaped in every line.

A log line holds what clients send (model names, paths, header values). Written raw, a
newline in a model name would start a line of the client's choosing (a forged access-log
entry), and an escape sequence would drive the operator's terminal. So the formatter here:

- escapes every control character in the strings a message is formatted with (``\\n`` as
  ``\\\\n``, ``\\x1b`` as ``\\\\x1b``...; also DEL, C1 and the Unicode line separators),
  so a record made of them stays one line;
- escapes the control characters left in the formatted record (its own text and a
  traceback) but the newline, and indents every line after the first, so a line that
  does not start with a space always starts a record.
"""

from __future__ import annotations

import logging
from typing import Any

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_CONTROL = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _escape(code: int) -> str:
    if code in _NAMED:
        return _NAMED[code]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_ALL = {code: _escape(code) for code in _CONTROL}
_ALL_BUT_LINES = {code: text for code, text in _ALL.items() if code not in (0x09, 0x0A)}


def escape(text: str) -> str:
    """`text` with every control character written as its escape (one line)."""
    return text.translate(_ALL)


def _escaped_arg(value: Any) -> Any:
    # Other values keep their type (%d, %r work as ever); what their text holds is escaped
    # by the pass over the whole record.
    return escape(value) if isinstance(value, str) else value


class EscapingFormatter(logging.Formatter):
    """A Formatter whose records cannot hold a raw control character (see above)."""

    def format(self, record: logging.LogRecord) -> str:
        args = record.args
        if args:
            if isinstance(args, dict):
                escaped: Any = {k: _escaped_arg(v) for k, v in args.items()}
            else:
                escaped = tuple(_escaped_arg(v) for v in args)
            record = logging.makeLogRecord({**record.__dict__, "args": escaped})
        text = super().format(record)
        return text.translate(_ALL_BUT_LINES).replace("\n", "\n  ")


def setup(level: str) -> None:
    """The process's logging: records at `level` and above to stderr, escaped."""
    handler = logging.StreamHandler()
    handler.setFormatter(EscapingFormatter(FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


def granian_config() -> dict[str, Any]:
    """granian's own log formatters, escaping as well (its ``log_dictconfig``)."""
    formatter = f"{__name__}.EscapingFormatter"
    return {
        "formatters": {
            "generic": {"()": formatter, "fmt": "[%(levelname)s] %(message)s"},
            "access": {"()": formatter, "fmt": "%(message)s"},
        }
    }
