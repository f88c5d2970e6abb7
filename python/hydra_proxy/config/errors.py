"""ConfigError: every problem found in a configuration, each with where and what to do."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the configuration."""

    message: str
    file: str | None = None
    line: int | None = None
    hint: str | None = None

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = f"{self.file}:{self.line}: " if self.line is not None else f"{self.file}: "
        return where + self.message + (f"\n  -> {self.hint}" if self.hint else "")


class ConfigError(ValueError):
    """The configuration is invalid; the message says where and what to do.

    Carries every problem found (validation does not stop at the first), so a user fixes
    the file in one pass.
    """

    def __init__(self, problems: str | Problem | list[Problem]) -> None:
        if isinstance(problems, str):
            problems = [Problem(problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
