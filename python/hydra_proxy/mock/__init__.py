"""The embedded mock upstream (``hydra-proxy mock``): an LLM API server that speaks
OpenAI Chat Completions, Anthropic Messages, OpenAI Responses and Gemini, streaming and
not, with scripted turns, fixture replay and latency/error knobs. Used by the demo, the tests and the benchmarks.

Only the standard library, orjson and (to serve) granian are used here.
"""

from __future__ import annotations

from .app import ASGIApp, MockApp, create_app
from .options import MockOptions
from .script import ScriptedReply, ScriptError, parse_reply, parse_script
from .server import MockServer, MockServerError, serve

__all__ = [
    "ASGIApp",
    "MockApp",
    "MockOptions",
    "MockServer",
    "MockServerError",
    "ScriptError",
    "ScriptedReply",
    "create_app",
    "parse_reply",
    "parse_script",
    "serve",
]
