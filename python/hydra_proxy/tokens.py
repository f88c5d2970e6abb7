"""Input-token counts for Anthropic Messages requests (count_tokens, message_start usage).

Anthropic's tokenizer is not public, so this is an estimate: the text the model sees is
counted with the o200k_base BPE (tiktoken's Rust core), whose vocabulary ships inside this
package (``data/o200k_base.tiktoken``, see ``data/SOURCES.md``) and is loaded once per
process on first use. Nothing is downloaded at run time.

What is counted, and the constants used (calibrated against real Anthropic answers, see
``tests/request/test_tokens.py``):

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

The work one request can cause is bounded whatever it holds (a client picks the bytes):

* a text longer than ``_EXACT_CHARS`` is counted on ``_WINDOWS`` evenly spaced windows and
  scaled by its length; one request tokenizes at most ``REQUEST_BUDGET_CHARS`` characters
  that the cache does not already know, and estimates the texts past that at the
  tokens-per-character of what it did count (`Budget`);
* a PDF is read from its first and last ``_PDF_SCAN_BYTES`` (page objects there, scaled to
  the whole file, unless the page tree's ``/Count`` is among them); an image header from at
  most ``_IMAGE_SCAN_B64_CHARS`` of base64 and ``_JPEG_MAX_SEGMENTS`` JPEG segments; a
  base64 text document from at most ``_DOCUMENT_SCAN_B64_CHARS``;
* every scan is linear: no regular expression here backtracks.
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

__all__ = [
    "REQUEST_BUDGET_CHARS",
    "Budget",
    "count_tokens",
    "estimate_input_tokens",
    "input_bound",
    "load_encoding",
    "warm_up",
]

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

# Every text is cached: a lookup (its hash) costs well under a microsecond, tokenizing even
# a tool's name a few.
_CACHE_MIN_CHARS = 1
_CACHE_ENTRIES = 32768  # digest (16 bytes) -> count: about 6 MB when full
# Texts longer than this are counted on windows (start, evenly spaced, end) and scaled by
# length: o200k costs up to ~0.4 us a character on text made to be slow (one long run of
# letters, spaces or emoji is one BPE piece), so one text must not decide the request's time.
_EXACT_CHARS = 16384
_WINDOWS = 4
_WINDOW_CHARS = _EXACT_CHARS // _WINDOWS
# Characters one request may tokenize that the cache does not already know: about 25 ms on
# the slowest text, and more than the whole first request of a Claude Code session.
REQUEST_BUDGET_CHARS = 65536
# Tokens per character assumed before a request has counted anything.
_DEFAULT_RATIO = 0.25


class Budget:
    """What one count may still tokenize afresh, and what it examined (for the tests and
    the benchmark): characters tokenized, characters estimated without it, bytes of
    documents and images read."""

    __slots__ = (
        "counted_chars",
        "counted_tokens",
        "estimated_chars",
        "left",
        "limit",
        "scanned_bytes",
    )

    def __init__(self, chars: int = REQUEST_BUDGET_CHARS) -> None:
        self.limit = self.left = chars
        self.counted_chars = 0  # characters of the texts counted (their full length)
        self.counted_tokens = 0
        self.estimated_chars = 0  # characters of the texts estimated from the ratio
        self.scanned_bytes = 0  # decoded document and image bytes read

    @property
    def examined_chars(self) -> int:
        """Characters handed to the tokenizer (a sampled text counts its windows only)."""
        return self.limit - self.left

    def ratio(self) -> float:
        if self.counted_chars == 0:
            return _DEFAULT_RATIO
        return self.counted_tokens / self.counted_chars


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


def _tokenize_cost(length: int) -> int:
    """Characters `_tokenize` hands to the tokenizer for a text of `length`."""
    return length if length <= _EXACT_CHARS else _WINDOWS * _WINDOW_CHARS


def _tokenize(text: str) -> int:
    enc = load_encoding()
    n = len(text)
    if n <= _EXACT_CHARS:
        return len(enc.encode_ordinary(text))
    step = (n - _WINDOW_CHARS) / (_WINDOWS - 1)
    counted = 0
    for i in range(_WINDOWS):
        start = round(i * step)
        counted += len(enc.encode_ordinary(text[start : start + _WINDOW_CHARS]))
    return math.ceil(counted * n / (_WINDOWS * _WINDOW_CHARS))


def text_tokens(text: str, budget: Budget | None = None) -> int:
    """o200k tokens in ``text`` (special-token strings count as ordinary text); within
    `budget` when one is given (past it: estimated at the ratio counted so far)."""
    if not text:
        return 0
    if len(text) < _CACHE_MIN_CHARS:
        return _tokenize(text)
    # str's own hash: SipHash keyed per process (PYTHONHASHSEED), so a client cannot aim a
    # collision at another's text; 5x cheaper than encoding and digesting (about 40 us
    # against 200 us for the 48 kB of text in a Claude Code request).
    key = (len(text), hash(text))
    count = _cache.get(key)
    if count is not None:
        return count
    cost = _tokenize_cost(len(text))
    if budget is not None:
        if cost > budget.left:
            budget.estimated_chars += len(text)
            return max(1, math.ceil(len(text) * budget.ratio()))
        budget.left -= cost
    count = _tokenize(text)
    if budget is not None:
        budget.counted_chars += len(text)
        budget.counted_tokens += count
    _cache.put(key, count)
    return count


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # not JSON-serializable (cannot come from a parsed body)
        return str(value)
    except orjson.JSONEncodeError:  # nested past orjson's 254 levels: its size will do
        return str(value)


# --- images and documents -------------------------------------------------------------

_IMAGE_MAX_EDGE = 1568
_IMAGE_PIXELS_PER_TOKEN = 750
_IMAGE_MAX_TOKENS = 1600  # ~1.15-1.2 megapixels, Anthropic's resize target
_IMAGE_DEFAULT_TOKENS = 1600  # size unknown: most screenshots reach the cap
_IMAGE_HEADER_B64_CHARS = 1 << 16  # decode this much base64 first (JPEG may need more)
# At most this much base64 is decoded to find a JPEG's frame header (past EXIF, ICC and
# thumbnail segments), and at most this many segments are stepped over.
_IMAGE_SCAN_B64_CHARS = 1 << 20
_JPEG_MAX_SEGMENTS = 1024

# Anthropic's PDF guide: each page costs its text, "typically 1,500-3,000 tokens", plus the
# page as an image. Dense pages reach ~4,600 and sparse ones far less; 2,000 is a middle
# guess that the context bar can live with. Without readable page objects, the page count is
# guessed at one page per 50 kB of PDF.
_PDF_TOKENS_PER_PAGE = 2000
_PDF_BYTES_PER_PAGE = 50_000
# A larger PDF is read at its start and its end only (each this many decoded bytes).
_PDF_SCAN_BYTES = 1 << 19
# Linear patterns: a literal start, then runs that stop at the first byte outside them.
_PDF_PAGE_OBJECT = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_PDF_PAGES_TYPE = re.compile(rb"/Type\s*/Pages(?![A-Za-z0-9_])")
_PDF_COUNT = re.compile(rb"/Count\s+(\d{1,9})(?!\d)")
# Page tree nodes read: a 10,000-page file has a few hundred; the root (the largest count)
# is among the first a file's start or end holds.
_PDF_MAX_TREE_NODES = 512
# Text sent as a base64 document: at most this much is decoded, the rest scaled by size.
_DOCUMENT_SCAN_B64_CHARS = 1 << 18


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
_JPEG_FILL = re.compile(rb"\xff+")


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i, n = 2, len(data)
    for _ in range(_JPEG_MAX_SEGMENTS):  # real files reach the frame in a few dozen
        if i + 4 > n or data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill bytes: step over the whole run at once
            fill = _JPEG_FILL.match(data, i + 1)
            assert fill is not None
            i = fill.end() - 1
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


def _b64_slice(data: str, start: int, chars: int) -> bytes:
    """The bytes of base64 `data[start:start + chars]` (both rounded down to whole quads)."""
    start -= start % 4
    try:
        return binascii.a2b_base64(data[start : start + chars - chars % 4])
    except (binascii.Error, ValueError):
        return b""


def _b64_payload(data: Any) -> str | None:
    if not isinstance(data, str):
        return None
    if data.startswith("data:"):  # tolerate a data URL
        comma = data.find(",")
        return data[comma + 1 :] if comma >= 0 else None
    return data


def _image_tokens(source: Any, budget: Budget | None = None) -> int:
    if not isinstance(source, dict) or source.get("type") != "base64":
        return _IMAGE_DEFAULT_TOKENS
    data = _b64_payload(source.get("data"))
    if not data:
        return _IMAGE_DEFAULT_TOKENS
    head = _b64_prefix(data, _IMAGE_HEADER_B64_CHARS)
    size = image_size(head)
    if size is None and len(data) > _IMAGE_HEADER_B64_CHARS and head[:2] == b"\xff\xd8":
        head = _b64_prefix(data, _IMAGE_SCAN_B64_CHARS)  # a JPEG with a long EXIF block
        size = image_size(head)
    if budget is not None:
        budget.scanned_bytes += len(head)
    return _IMAGE_DEFAULT_TOKENS if size is None else image_tokens_for_size(*size)


def _page_tree_count(pdf: bytes) -> int:
    """The largest ``/Count`` of a ``/Type /Pages`` dictionary (0: none): both in one run of
    bytes between two ``>``, as a dictionary without nested ones has them. Each byte is read
    a bounded number of times however many markers the file repeats (a search starts after
    the run the last one read), and at most ``_PDF_MAX_TREE_NODES`` runs are read."""
    best = 0
    end = 0  # every byte before this has been read
    for _ in range(_PDF_MAX_TREE_NODES):
        match = _PDF_PAGES_TYPE.search(pdf, end)
        if match is None:
            return best
        start = pdf.rfind(b">", end, match.start()) + 1 or end
        close = pdf.find(b">", match.end())
        end = len(pdf) if close < 0 else close
        counts = _PDF_COUNT.findall(pdf, start, end)
        if counts:
            best = max(best, *map(int, counts))
    return best


def pdf_pages(pdf: bytes, size: int | None = None) -> int:
    """Pages in a PDF: page objects, else the page tree's /Count, else a guess by size.

    `pdf` may be the file's start and end only (`size`: the whole file's bytes): then the
    page tree's /Count wins if either holds it, else the page objects found are scaled to
    the whole file."""
    total = len(pdf) if size is None else size
    if total <= len(pdf):
        pages = len(_PDF_PAGE_OBJECT.findall(pdf))
        if pages:
            return pages
        counted = _page_tree_count(pdf)
        if counted:
            return counted
    else:
        counted = _page_tree_count(pdf)
        if counted:
            return counted
        pages = len(_PDF_PAGE_OBJECT.findall(pdf))
        if pages:
            return max(1, round(pages * total / len(pdf)))
    return max(1, round(total / _PDF_BYTES_PER_PAGE))


_PDF_KEY_EDGE_CHARS = 4096


def _cached_pdf_pages(payload: str, budget: Budget | None = None) -> int:
    # A PDF is re-sent with every later request of the conversation: remember its page count
    # under its length, head and tail rather than decode (and hash) megabytes each time.
    edge = _PDF_KEY_EDGE_CHARS
    key = hashlib.blake2b(
        b"pdf:%d:%s:%s" % (len(payload), payload[:edge].encode(), payload[-edge:].encode()),
        digest_size=16,
    ).digest()
    pages = _cache.get(key)
    if pages is None:
        scan = _PDF_SCAN_BYTES * 4 // 3  # base64 characters of one end
        if len(payload) <= 2 * scan:
            data = _b64_prefix(payload, len(payload))
            pages = pdf_pages(data)
        else:
            tail = len(payload) - scan
            data = _b64_prefix(payload, scan) + b"\n" + _b64_slice(payload, tail, scan)
            pages = pdf_pages(data, size=len(payload) * 3 // 4)
        if budget is not None:
            budget.scanned_bytes += len(data)
        _cache.put(key, pages)
    return pages


def _base64_text_tokens(payload: str, budget: Budget | None) -> int:
    """A text document sent as base64: its text's tokens, from at most
    ``_DOCUMENT_SCAN_B64_CHARS`` of it scaled to the whole."""
    sample = _b64_prefix(payload, min(len(payload), _DOCUMENT_SCAN_B64_CHARS))
    if budget is not None:
        budget.scanned_bytes += len(sample)
    text = sample.decode("utf-8", "replace")
    counted = text_tokens(text, budget)
    if len(payload) <= _DOCUMENT_SCAN_B64_CHARS or not sample:
        return counted
    return math.ceil(counted * (len(payload) * 3 / 4) / len(sample))


def _document_tokens(block: dict[str, Any], budget: Budget | None = None) -> int:
    total = 0
    for key in ("title", "context"):
        value = block.get(key)
        if isinstance(value, str):
            total += text_tokens(value, budget)
    source = block.get("source")
    if not isinstance(source, dict):
        return total + _PDF_TOKENS_PER_PAGE
    kind = source.get("type")
    if kind == "text":
        data = source.get("data")
        return total + (text_tokens(data, budget) if isinstance(data, str) else 0)
    if kind == "content":
        return total + _content_tokens(source.get("content"), budget)
    if kind == "base64":
        payload = _b64_payload(source.get("data"))
        media = source.get("media_type")
        if payload and media not in (None, "application/pdf"):  # plain text sent as base64
            return total + _base64_text_tokens(payload, budget)
        if payload:
            return total + _PDF_TOKENS_PER_PAGE * _cached_pdf_pages(payload, budget)
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


def _content_tokens(content: Any, budget: Budget | None = None) -> int:
    if isinstance(content, str):
        return text_tokens(content, budget)
    if isinstance(content, list):
        return sum(_block_tokens(block, budget) for block in content)
    if isinstance(content, dict):
        return _block_tokens(content, budget)
    return 0


def _block_tokens(block: Any, budget: Budget | None = None) -> int:
    if isinstance(block, str):
        return text_tokens(block, budget)
    if not isinstance(block, dict):
        return 0
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return _BLOCK_OVERHEAD + (text_tokens(text, budget) if isinstance(text, str) else 0)
    if kind == "thinking":
        text = block.get("thinking")
        return _BLOCK_OVERHEAD + (text_tokens(text, budget) if isinstance(text, str) else 0)
    if kind == "redacted_thinking":
        data = block.get("data")
        return _BLOCK_OVERHEAD + (len(data) * 3 // 16 if isinstance(data, str) else 0)
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        name = block.get("name")
        return (
            _TOOL_USE_OVERHEAD
            + (text_tokens(name, budget) if isinstance(name, str) else 0)
            + text_tokens(_json_text(block.get("input", {})), budget)
        )
    if kind in ("tool_result", "mcp_tool_result"):
        return _TOOL_RESULT_OVERHEAD + _content_tokens(block.get("content"), budget)
    if kind == "image":
        return _image_tokens(block.get("source"), budget)
    if kind == "document":
        return _document_tokens(block, budget)
    if kind == "search_result":
        total = _TOOL_RESULT_OVERHEAD + _content_tokens(block.get("content"), budget)
        for key in ("source", "title"):
            value = block.get(key)
            if isinstance(value, str):
                total += text_tokens(value, budget)
        return total
    # Anything else (web search results, container uploads, future block types): the
    # compact JSON of what is left once the bookkeeping keys are dropped.
    rest = {k: v for k, v in block.items() if k not in _NOT_TEXT}
    return _BLOCK_OVERHEAD + (text_tokens(_json_text(rest), budget) if rest else 0)


def _tool_tokens(tool: Any, budget: Budget | None = None) -> int:
    if not isinstance(tool, dict) or tool.get("defer_loading") is True:
        return 0
    kind = tool.get("type")
    if "input_schema" in tool or kind in (None, "custom"):
        total = _TOOL_OVERHEAD
        for key in ("name", "description"):
            value = tool.get(key)
            if isinstance(value, str):
                total += text_tokens(value, budget)
        schema = tool.get("input_schema")
        if schema is not None:
            total += text_tokens(_json_text(schema), budget)
        return total
    if isinstance(kind, str):
        for prefix, size in _BUILTIN_TOOL_TOKENS:
            if kind.startswith(prefix):
                return size
    rest = {k: v for k, v in tool.items() if k != "cache_control"}
    return _TOOL_OVERHEAD + text_tokens(_json_text(rest), budget)


def _tool_prompt_tokens(tool_choice: Any) -> int:
    if isinstance(tool_choice, dict) and tool_choice.get("type") in ("any", "tool"):
        return _TOOL_PROMPT_FORCED
    return _TOOL_PROMPT_AUTO


MessageCounts = dict[int, tuple[Any, int]]
"""The content tokens of each message of a request, by the message object's id (the object
kept with its count, so that the id stays its own)."""
_MEMO = "message tokens"


def count_tokens(
    body: dict[str, Any], budget: Budget | None = None, memo: dict[Any, Any] | None = None
) -> int:
    """Estimated input tokens of an Anthropic Messages (or count_tokens) request body,
    tokenizing at most what `budget` allows (default: a fresh `Budget`). `memo`: what the
    session's previous request left (server/previous_turn.KeptRequest.memo): a message that is the
    same object as one counted then is not counted again.

    Raises if the tokenizer cannot be loaded; ``estimate_input_tokens`` never does.
    """
    if budget is None:
        budget = Budget()
    total = _REQUEST_OVERHEAD + _content_tokens(body.get("system"), budget)
    messages = body.get("messages")
    if isinstance(messages, list):
        known: MessageCounts = memo.get(_MEMO, {}) if memo is not None else {}
        counted: MessageCounts = {}
        for message in messages:
            total += _MESSAGE_OVERHEAD
            if isinstance(message, dict):
                before = known.get(id(message))
                if before is not None and before[0] is message:
                    tokens = before[1]
                else:
                    tokens = _content_tokens(message.get("content"), budget)
                counted[id(message)] = (message, tokens)
                total += tokens
        if memo is not None:
            memo[_MEMO] = counted
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        total += _tool_prompt_tokens(body.get("tool_choice"))
        total += sum(_tool_tokens(tool, budget) for tool in tools)
    return max(1, total)


# --- the reservation's upper bound ---------------------------------------------------

# An o200k token is at least one byte of UTF-8, so a text of n bytes is at most n tokens.
# The bound counts text at this many bytes a token: whatever a client puts where the
# estimate samples, the real count is at most this many times the bound (a little above
# it for plain English, about 4.5 bytes a token). One pass over the request: a length per
# string, no tokenizer.
BOUND_BYTES_PER_TOKEN = 4
# What the bound skips: bookkeeping, and the media the estimate sizes from their headers.
_BOUND_SKIPPED = _NOT_TEXT | {"source"}


def input_bound(body: dict[str, Any]) -> int:
    """An upper bound, to within BOUND_BYTES_PER_TOKEN, of the input tokens of an
    Anthropic Messages request, in time linear in its size: every text (keys and values;
    JSON numbers by their digits) at BOUND_BYTES_PER_TOKEN bytes a token, images at
    Anthropic's largest size, documents as the estimate reads them (a text document's
    text counted as text). What a budget or a tpm limit reserves for a request."""
    walk = _BoundWalk()
    for key in ("system", "messages", "tools"):
        walk.value(body.get(key))
    return max(1, -(-walk.size // BOUND_BYTES_PER_TOKEN) + walk.media)


class _BoundWalk:
    __slots__ = ("media", "size")

    def __init__(self) -> None:
        self.size = 0  # UTF-8 bytes of text
        self.media = 0  # tokens of images and non-text documents

    def value(self, value: Any) -> None:
        if isinstance(value, str):
            self.size += len(value) if value.isascii() else len(value.encode("utf-8", "replace"))
        elif isinstance(value, dict):
            self.block(value)
        elif isinstance(value, list):
            for item in value:
                self.value(item)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self.size += len(str(value))

    def block(self, block: dict[str, Any]) -> None:
        kind = block.get("type")
        if kind == "image":
            self.media += _IMAGE_MAX_TOKENS
        elif kind == "document":
            source = block.get("source")
            if isinstance(source, dict) and source.get("type") in ("text", "content"):
                self.value(source.get("data"))
                self.value(source.get("content"))
            else:
                self.media += _document_tokens({"source": source}, Budget())
        for key, item in block.items():
            if key not in _BOUND_SKIPPED:
                self.size += len(key)
                self.value(item)


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


def estimate_input_tokens(body: dict[str, Any], memo: dict[Any, Any] | None = None) -> int:
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
            return count_tokens(body, memo=memo)
        except Exception:  # a body shape the walk does not expect: estimate, do not fail
            log.exception("token counting failed; estimating four characters a token")
    try:
        return _chars_estimate(body)
    except RecursionError:
        return 1
