"""Configuration of the mock upstream (the CLI flags, minus where it listens)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_PORT = 4010
DEFAULT_HOST = "127.0.0.1"
MAX_BODY_BYTES = 32 * 1024 * 1024

# Named benchmark presets: (chunks, delay_ms). "paced" is the shape published gateway
# benchmarks use; "instant" writes the whole stream at once.
BENCH_MODES: dict[str, tuple[int, float]] = {
    "instant": (16, 0.0),
    "paced": (64, 20.0),
}


@dataclass(frozen=True)
class MockOptions:
    """Everything that shapes the mock's replies; picklable (it crosses into granian workers).

    Every knob except the limits and paths can be overridden per request with an
    ``x-mock-*`` header or per scripted turn.
    """

    chunks: int = 16
    """Number of content deltas in the canned reply."""
    chunk_size: int = 8
    """Characters per text/reasoning/arguments delta."""
    delay_ms: float = 0.0
    """Pause between two streamed events (0: the whole stream is written at once)."""
    jitter_ms: float = 0.0
    """Random extra pause in [0, jitter_ms) added to every delay."""
    ttfb_ms: float = 0.0
    """Pause before the response headers (time to first byte)."""
    split_bytes: int = 0
    """When > 0, the body is re-cut into pieces of this many bytes (parser torture)."""
    error_rate: float = 0.0
    """Fraction of model requests answered with an overload error (529 / 503)."""
    replay: Path | None = None
    """A recorded fixture used as the default reply instead of the canned one."""
    fixtures: Path | None = None
    """Directory that scripted ``{"replay": name}`` turns are resolved against."""
    max_recorded: int = 1000
    """How many requests ``GET /_mock/requests`` remembers (0: record nothing)."""
    max_recorded_bytes: int = 64 * 1024 * 1024
    """Upper bound on the summed raw body size of the recorded requests."""
    max_body_bytes: int = MAX_BODY_BYTES
    """Larger request bodies are refused with 413."""
    max_script: int = 10_000
    """Upper bound on queued scripted turns."""
    refuse_params: tuple[str, ...] = ()
    """Chat requests carrying one of these top-level fields are refused with OpenAI's own
    400 for a parameter a model does not take (``unsupported_parameter``)."""
    max_output: int | None = None
    """Chat requests asking more output tokens (``max_tokens`` / ``max_completion_tokens``)
    are refused with the 400 a provider with that output limit answers."""
    prefix_cache: bool = False
    """Report cached input as a provider's prompt cache by prefix would (`prefix_cache`);
    per request with the ``x-mock-prefix-cache: 1`` header."""

    def __post_init__(self) -> None:
        if self.chunks < 0:
            raise ValueError("chunks must be >= 0")
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        for name in ("delay_ms", "jitter_ms", "ttfb_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.split_bytes < 0:
            raise ValueError("split_bytes must be >= 0")
        if not 0.0 <= self.error_rate <= 1.0:
            raise ValueError("error_rate must be between 0 and 1")
        if self.max_recorded < 0 or self.max_recorded_bytes < 0:
            raise ValueError("recording bounds must be >= 0")
        if self.max_body_bytes < 1 or self.max_script < 0:
            raise ValueError("limits must be positive")
