"""Input-token counts for Anthropic Messages requests (count_tokens, message_start usage).

Anthropic's tokenizer is not public, so this is an estimate: the text the model sees is
counted with the o200k_base BPE (tiktoken's Rust core), whose vocabulary ships inside this
package (``data/o200k_base.tiktoken``, see ``data/SOURCES.md``) and is loaded once per
process on first use. Nothing is downloaded at run time.

What is counted, and the constants used (calibrated against real Anthropic answers, see
``tests/test_tokens.py``):

* every request: ``_REQUEST_OVERHEAD``; every message: ``_MESSAGE_OVERHEAD`` (together 7,
  which two independent Anthropic answers agree on); small guessed overheads per content
  block, ``tool_use`` and ``tool_result`` (Anthropic documents none);
* text of ``system`` (string or blocks) and of every content block: ``text``, ``thinking``
  (its text, not the signature), ``tool_use`` (name + compact JSON of the input),
  ``tool_result`` (its content, recursively), document and search-result text;
  ``redacted_thinking`` as about one token per four encrypted bytes;
* tools: Anthropic's tool-use system prompt (346 tokens with ``tool_choice`` auto/none,
  313 with any/tool) once, then for each custom tool its name, description and compact
  JSON input schema (the documented get_weather example leaves no room for a per-tool
  overhead beyond that); tools with ``defer_loading`` are not in the
  model's context and count nothing; Anthropic-defined tools (``bash_*``,
  ``text_editor_*``, ``computer_*``) their published sizes, other server tools their
  compact JSON;
* images: Anthropic's published formula ``width * height / 750`` after the image is scaled
  to a long edge of at most 1568 px and at most ~1.15 megapixels (so at most 1600 tokens),
  with the size read from the PNG, JPEG, GIF or WebP header of base64 data;
  ``_IMAGE_DEFAULT_TOKENS`` when it cannot be read (URL and file sources too);
* PDFs: ``_PDF_TOKENS_PER_PAGE`` per page, pages counted from the PDF's page objects, else
  guessed from the size (``_PDF_BYTES_PER_PAGE``); text documents their text.

Texts are tokenized through a bounded LRU keyed by the text's length and Python hash, so
the system prompt, tool definitions and earlier messages, which repeat on every request of
a session, are tokenized once.
"""

from __future__ import annotations

import binascii
import hashlib
import logging
import math
import re
import threading
from collections import OrderedDict
from importlib import resources
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import tiktoken

__all__ = ["count_tokens", "estimate_input_tokens", "load_encoding", "warm_up"]

log = logging.getLogger("hydra_proxy")

# --- the vocabulary -------------------------------------------------------------------

VOCABULARY_FILE = "o200k_base.tiktoken"
# The hash tiktoken itself pins for this file (tiktoken_ext/openai_public.py).
VOCABULARY_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

# o200k_base's pre-tokenizer, verbatim from tiktoken_ext/openai_public.py (tiktoken 0.14.0).
_O200K_PAT_STR = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}

_encoding: tiktoken.Encoding | None = None
_encoding_lock = threading.Lock()
_encoding_failed = False


def _read_vocabulary() -> bytes:
    return resources.files("hydra_proxy").joinpath("data").joinpath(VOCABULARY_FILE).read_bytes()


def _parse_vocabulary(data: bytes) -> dict[bytes, int]:
    """``base64(token) rank`` lines, the .tiktoken format."""
    ranks: dict[bytes, int] = {}
    a2b = binascii.a2b_base64
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[a2b(token)] = int(rank)
    return ranks


def load_encoding() -> tiktoken.Encoding:
    """The o200k_base encoding, built from the packaged vocabulary once per process."""
    enc = _encoding
    if enc is not None:
        return enc
    return _load_encoding_locked()


def _load_encoding_locked() -> tiktoken.Encoding:
    global _encoding
    with _encoding_lock:
        if _encoding is None:
            import tiktoken

            data = _read_vocabulary()
            digest = hashlib.sha256(data).hexdigest()
            if digest != VOCABULARY_SHA256:
                raise ValueError(
                    f"{VOCABULARY_FILE}: sha256 {digest} is not the expected {VOCABULARY_SHA256}"
                )
            _encoding = tiktoken.Encoding(
                "o200k_base",
                pat_str=_O200K_PAT_STR,
                mergeable_ranks=_parse_vocabulary(data),
                special_tokens=_O200K_SPECIAL_TOKENS,
            )
        return _encoding


def warm_up() -> None:
    """Load the tokenizer now (about 0.3 s) instead of on the first request."""
    load_encoding()


# --- text, through the cache ----------------------------------------------------------

# Shorter texts are tokenized directly. Every text is cached: a lookup (its hash) costs
# well under a microsecond, tokenizing even a tool's name a few.
_CACHE_MIN_CHARS = 1
_CACHE_ENTRIES = 32768  # digest (16 bytes) -> count: about 6 MB when full
# Texts longer than this are counted on a sample (head, middle, tail) and scaled by length,
# which bounds the time one pathological text can hold the event loop.
_SAMPLE_ABOVE_CHARS = 1 << 20
_SAMPLE_CHARS = 1 << 17


# A text's (length, hash(text)), or a digest (PDF page counts).
_Key = tuple[int, int] | bytes


class _Lru:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.entries: OrderedDict[_Key, int] = OrderedDict()
        self.lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: _Key) -> int | None:
        with self.lock:
            value = self.entries.get(key)
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
                self.entries.move_to_end(key)
            return value

    def put(self, key: _Key, value: int) -> None:
        with self.lock:
            self.entries[key] = value
            self.entries.move_to_end(key)
            while len(self.entries) > self.capacity:
                self.entries.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.hits = self.misses = 0


_cache = _Lru(_CACHE_ENTRIES)


def _tokenize(text: str) -> int:
    enc = load_encoding()
    n = len(text)
    if n <= _SAMPLE_ABOVE_CHARS:
        return len(enc.encode_ordinary(text))
    mid = n // 2 - _SAMPLE_CHARS // 2
    sample = (
        text[:_SAMPLE_CHARS],
        text[mid : mid + _SAMPLE_CHARS],
        text[n - _SAMPLE_CHARS :],
    )
    counted = sum(len(enc.encode_ordinary(s)) for s in sample)
    return math.ceil(counted * n / (3 * _SAMPLE_CHARS))


def text_tokens(text: str) -> int:
    """o200k tokens in ``text`` (special-token strings count as ordinary text)."""
    if not text:
        return 0
    if len(text) < _CACHE_MIN_CHARS:
        return _tokenize(text)
    # str's own hash: SipHash keyed per process (PYTHONHASHSEED), so a client cannot aim a
    # collision at another's text; 5x cheaper than encoding and digesting (about 40 us
    # against 200 us for the 48 kB of text in a Claude Code request).
    key = (len(text), hash(text))
    count = _cache.get(key)
    if count is None:
        count = _tokenize(text)
        _cache.put(key, count)
    return count


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # not JSON-serializable (cannot come from a parsed body)
        return str(value)


# --- images and documents -------------------------------------------------------------

_IMAGE_MAX_EDGE = 1568
_IMAGE_PIXELS_PER_TOKEN = 750
_IMAGE_MAX_TOKENS = 1600  # ~1.15-1.2 megapixels, Anthropic's resize target
_IMAGE_DEFAULT_TOKENS = 1600  # size unknown: most screenshots reach the cap
_IMAGE_HEADER_B64_CHARS = 1 << 16  # decode this much base64 first (JPEG may need more)

# Anthropic's PDF guide: each page costs its text, "typically 1,500-3,000 tokens", plus the
# page as an image. Dense pages reach ~4,600 and sparse ones far less; 2,000 is a middle
# guess that the context bar can live with. Without readable page objects, the page count is
# guessed at one page per 50 kB of PDF.
_PDF_TOKENS_PER_PAGE = 2000
_PDF_BYTES_PER_PAGE = 50_000
_PDF_PAGE_OBJECT = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_PDF_PAGES_COUNT = re.compile(
    rb"/Type\s*/Pages\b[^>]*?/Count\s+(\d+)|/Count\s+(\d+)[^>]*?/Type\s*/Pages\b"
)


def image_tokens_for_size(width: int, height: int) -> int:
    """Anthropic's formula: tokens = width * height / 750 after the API's downscaling."""
    if width <= 0 or height <= 0:
        return _IMAGE_DEFAULT_TOKENS
    w, h = float(width), float(height)
    longest = max(w, h)
    if longest > _IMAGE_MAX_EDGE:
        scale = _IMAGE_MAX_EDGE / longest
        w, h = w * scale, h * scale
    return max(1, min(_IMAGE_MAX_TOKENS, math.ceil(w * h / _IMAGE_PIXELS_PER_TOKEN)))


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from the header of a PNG, JPEG, GIF or WebP file, else None."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24 and data[12:16] == b"IHDR":
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        return _webp_size(data)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        w = int.from_bytes(data[26:28], "little") & 0x3FFF
        h = int.from_bytes(data[28:30], "little") & 0x3FFF
        return w, h
    if chunk == b"VP8L" and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    return None


# Start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) do not.
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i, n = 2, len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD9:  # no length
            i += 2
            continue
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if marker in _JPEG_SOF:
            if i + 9 > n:
                return None
            height = int.from_bytes(data[i + 5 : i + 7], "big")
            width = int.from_bytes(data[i + 7 : i + 9], "big")
            return width, height
        if length < 2:
            return None
        i += 2 + length
    return None


def _b64_prefix(data: str, chars: int) -> bytes:
    try:
        return binascii.a2b_base64(data[: chars - chars % 4])
    except (binascii.Error, ValueError):
        return b""


def _b64_payload(data: Any) -> str | None:
    if not isinstance(data, str):
        return None
    if data.startswith("data:"):  # tolerate a data URL
        comma = data.find(",")
        return data[comma + 1 :] if comma >= 0 else None
    return data


def _image_tokens(source: Any) -> int:
    if not isinstance(source, dict) or source.get("type") != "base64":
        return _IMAGE_DEFAULT_TOKENS
    data = _b64_payload(source.get("data"))
    if not data:
        return _IMAGE_DEFAULT_TOKENS
    size = image_size(_b64_prefix(data, _IMAGE_HEADER_B64_CHARS))
    if size is None and len(data) > _IMAGE_HEADER_B64_CHARS:
        size = image_size(_b64_prefix(data, len(data)))  # a JPEG with a long EXIF block
    return _IMAGE_DEFAULT_TOKENS if size is None else image_tokens_for_size(*size)


def pdf_pages(pdf: bytes) -> int:
    """Pages in a PDF: page objects, else the page tree's /Count, else a guess by size."""
    pages = len(_PDF_PAGE_OBJECT.findall(pdf))
    if pages:
        return pages
    counts = [int(a or b) for a, b in _PDF_PAGES_COUNT.findall(pdf)]
    if counts:
        return max(1, max(counts))
    return max(1, round(len(pdf) / _PDF_BYTES_PER_PAGE))


_PDF_KEY_EDGE_CHARS = 4096


def _cached_pdf_pages(payload: str) -> int:
    # A PDF is re-sent with every later request of the conversation: remember its page count
    # under its length, head and tail rather than decode (and hash) megabytes each time.
    edge = _PDF_KEY_EDGE_CHARS
    key = hashlib.blake2b(
        b"pdf:%d:%s:%s" % (len(payload), payload[:edge].encode(), payload[-edge:].encode()),
        digest_size=16,
    ).digest()
    pages = _cache.get(key)
    if pages is None:
        pages = pdf_pages(_b64_prefix(payload, len(payload)))
        _cache.put(key, pages)
    return pages


def _document_tokens(block: dict[str, Any]) -> int:
    total = 0
    for key in ("title", "context"):
        value = block.get(key)
        if isinstance(value, str):
            total += text_tokens(value)
    source = block.get("source")
    if not isinstance(source, dict):
        return total + _PDF_TOKENS_PER_PAGE
    kind = source.get("type")
    if kind == "text":
        data = source.get("data")
        return total + (text_tokens(data) if isinstance(data, str) else 0)
    if kind == "content":
        return total + _content_tokens(source.get("content"))
    if kind == "base64":
        payload = _b64_payload(source.get("data"))
        media = source.get("media_type")
        if payload and media not in (None, "application/pdf"):  # plain text sent as base64
            try:
                text = binascii.a2b_base64(payload).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                text = ""
            return total + text_tokens(text)
        if payload:
            return total + _PDF_TOKENS_PER_PAGE * _cached_pdf_pages(payload)
    return total + _PDF_TOKENS_PER_PAGE  # url or file: the size is unknown, say one page


# --- content blocks, messages, tools ------------------------------------------------

_REQUEST_OVERHEAD = 4
_MESSAGE_OVERHEAD = 3
_BLOCK_OVERHEAD = 1
_TOOL_USE_OVERHEAD = 10
_TOOL_RESULT_OVERHEAD = 6
# Anthropic's one documented tool example (get_weather, 403 tokens) leaves no room for more
# than the schema's compact JSON: the wrapper is inside the tool-use system prompt below.
_TOOL_OVERHEAD = 0
_TOOL_PROMPT_AUTO = 346  # tool use system prompt, tool_choice auto or none
_TOOL_PROMPT_FORCED = 313  # tool_choice any or tool
# Anthropic-defined tools with published definition sizes (tool-use pricing docs).
_BUILTIN_TOOL_TOKENS = (("bash_", 245), ("text_editor_", 700), ("computer_", 735))
# Keys that carry no text the model reads.
_NOT_TEXT = frozenset({"type", "cache_control", "id", "tool_use_id", "signature", "citations"})


def _content_tokens(content: Any) -> int:
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, list):
        return sum(_block_tokens(block) for block in content)
    if isinstance(content, dict):
        return _block_tokens(content)
    return 0


def _block_tokens(block: Any) -> int:
    if isinstance(block, str):
        return text_tokens(block)
    if not isinstance(block, dict):
        return 0
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return _BLOCK_OVERHEAD + (text_tokens(text) if isinstance(text, str) else 0)
    if kind == "thinking":
        text = block.get("thinking")
        return _BLOCK_OVERHEAD + (text_tokens(text) if isinstance(text, str) else 0)
    if kind == "redacted_thinking":
        data = block.get("data")
        return _BLOCK_OVERHEAD + (len(data) * 3 // 16 if isinstance(data, str) else 0)
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        name = block.get("name")
        return (
            _TOOL_USE_OVERHEAD
            + (text_tokens(name) if isinstance(name, str) else 0)
            + text_tokens(_json_text(block.get("input", {})))
        )
    if kind in ("tool_result", "mcp_tool_result"):
        return _TOOL_RESULT_OVERHEAD + _content_tokens(block.get("content"))
    if kind == "image":
        return _image_tokens(block.get("source"))
    if kind == "document":
        return _document_tokens(block)
    if kind == "search_result":
        total = _TOOL_RESULT_OVERHEAD + _content_tokens(block.get("content"))
        for key in ("source", "title"):
            value = block.get(key)
            if isinstance(value, str):
                total += text_tokens(value)
        return total
    # Anything else (web search results, container uploads, future block types): the
    # compact JSON of what is left once the bookkeeping keys are dropped.
    rest = {k: v for k, v in block.items() if k not in _NOT_TEXT}
    return _BLOCK_OVERHEAD + (text_tokens(_json_text(rest)) if rest else 0)


def _tool_tokens(tool: Any) -> int:
    if not isinstance(tool, dict) or tool.get("defer_loading") is True:
        return 0
    kind = tool.get("type")
    if "input_schema" in tool or kind in (None, "custom"):
        total = _TOOL_OVERHEAD
        for key in ("name", "description"):
            value = tool.get(key)
            if isinstance(value, str):
                total += text_tokens(value)
        schema = tool.get("input_schema")
        if schema is not None:
            total += text_tokens(_json_text(schema))
        return total
    if isinstance(kind, str):
        for prefix, size in _BUILTIN_TOOL_TOKENS:
            if kind.startswith(prefix):
                return size
    rest = {k: v for k, v in tool.items() if k != "cache_control"}
    return _TOOL_OVERHEAD + text_tokens(_json_text(rest))


def _tool_prompt_tokens(tool_choice: Any) -> int:
    if isinstance(tool_choice, dict) and tool_choice.get("type") in ("any", "tool"):
        return _TOOL_PROMPT_FORCED
    return _TOOL_PROMPT_AUTO


def count_tokens(body: dict[str, Any]) -> int:
    """Estimated input tokens of an Anthropic Messages (or count_tokens) request body.

    Raises if the tokenizer cannot be loaded; ``estimate_input_tokens`` never does.
    """
    total = _REQUEST_OVERHEAD + _content_tokens(body.get("system"))
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in messages:
            total += _MESSAGE_OVERHEAD
            if isinstance(message, dict):
                total += _content_tokens(message.get("content"))
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        total += _tool_prompt_tokens(body.get("tool_choice"))
        total += sum(_tool_tokens(tool) for tool in tools)
    return max(1, total)


# --- the fallback -------------------------------------------------------------------


def _text_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_text_size(item) for item in value)
    if isinstance(value, dict):
        if value.get("type") == "image":
            return _IMAGE_DEFAULT_TOKENS * 4
        return sum(_text_size(v) for k, v in value.items() if k not in _NOT_TEXT and k != "role")
    return 0


def _chars_estimate(body: dict[str, Any]) -> int:
    size = _text_size(body.get("system")) + _text_size(body.get("messages"))
    size += _text_size(body.get("tools"))
    return max(1, size // 4)


def estimate_input_tokens(body: dict[str, Any]) -> int:
    """``count_tokens``, or about four characters a token if the tokenizer cannot load.

    Never raises and never returns 0: message_start and count_tokens depend on it.
    """
    global _encoding_failed
    if not _encoding_failed:
        try:
            load_encoding()
        except Exception:
            _encoding_failed = True
            log.exception("tokenizer unavailable; estimating four characters a token")
    if not _encoding_failed:
        try:
            return count_tokens(body)
        except Exception:  # a body shape the walk does not expect: estimate, do not fail
            log.exception("token counting failed; estimating four characters a token")
    try:
        return _chars_estimate(body)
    except RecursionError:
        return 1
