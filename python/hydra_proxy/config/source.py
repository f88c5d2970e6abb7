"""Line numbers for semantic errors: tomllib gives none, so a light scan of the file text
finds the table header or key a problem is about.

Paths are tuples as the parsed document nests them: ``("server", "port")``,
``("providers", "deepseek")``, ``("routes", 2, "provider")`` (array-of-tables entries by
index). The scan follows table headers and ``key =`` lines; it does not parse values, so a
key inside a multi-line string could be mistaken for one: the result is a hint for the
reader, never used for meaning.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Path = tuple[str | int, ...]

_HEADER = re.compile(r"^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(
    r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*="
)
_INLINE_KEY = re.compile(r"(?:^|[{,])\s*([A-Za-z0-9_-]+|\"[^\"]*\")\s*=")


def _bracket_balance(text: str) -> int:
    """Opened minus closed brackets outside strings and comments (light: no escapes)."""
    text = re.sub(r"\"[^\"]*\"|'[^']*'", "", text).split("#", 1)[0]
    return text.count("[") - text.count("]")


def _split_dotted(text: str) -> list[str]:
    parts = re.findall(r"\"[^\"]*\"|'[^']*'|[^.\s]+", text)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


class SourceMap:
    """Where each table header and key of a TOML text is (1-based lines)."""

    def __init__(self, text: str) -> None:
        self.lines: dict[Path, int] = {}
        counts: dict[tuple[str | int, ...], int] = {}
        table: Path = ()
        depth = 0  # open brackets of a multi-line array value
        for number, line in enumerate(text.splitlines(), start=1):
            if depth > 0:
                depth += _bracket_balance(line)
                continue
            header = _HEADER.match(line)
            if header and not _KEY.match(line):
                names = _split_dotted(header.group(2))
                if header.group(1) == "[[":
                    base = tuple(names)
                    index = counts.get(base, 0)
                    counts[base] = index + 1
                    table = (*base, index)
                else:
                    table = self._resolve(names)
                for end in range(1, len(table) + 1):  # `[a.b]` also locates `a`
                    self.lines.setdefault(table[:end], number)
                continue
            key = _KEY.match(line)
            if key:
                path = (*table, *_split_dotted(key.group(1)))
                self.lines.setdefault(path, number)
                rest = line[key.end() :]
                if "{" in rest:  # an inline table: its keys are on this line
                    for inner in _INLINE_KEY.finditer(rest[rest.index("{") :]):
                        name = inner.group(1).strip('"')
                        self.lines.setdefault((*path, name), number)
                depth = max(_bracket_balance(rest), 0)

    def _resolve(self, names: Sequence[str]) -> Path:
        # `[routes.effort]` after `[[routes]]` belongs to the latest routes entry.
        out: list[str | int] = []
        for name in names:
            out.append(name)
            latest = self._latest_index(tuple(out))
            if latest is not None:
                out.append(latest)
        return tuple(out)

    def _latest_index(self, prefix: Path) -> int | None:
        indexes = [
            last
            for p in self.lines
            if len(p) == len(prefix) + 1
            and p[: len(prefix)] == prefix
            and isinstance(last := p[-1], int)
        ]
        return max(indexes) if indexes else None

    def line(self, path: Path) -> int | None:
        """The line of `path`, else of its nearest enclosing table or key that was found."""
        for end in range(len(path), 0, -1):
            found = self.lines.get(path[:end])
            if found is not None:
                return found
        return None
