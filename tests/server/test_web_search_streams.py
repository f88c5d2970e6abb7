"""Web search results in the client's own blocks, on the recorded web-search streams, on
both implementations (byte-identical at any split).

- Claude Code on a Responses upstream (`AnthropicViaResponsesStream`): each
  ``web_search_call`` of the recording becomes a ``server_tool_use`` block named
  ``web_search`` whose input is the call's query, followed by a ``web_search_tool_result``
  listing the pages of its ``action.sources``; each ``url_citation`` annotation becomes a
  ``web_search_result_location`` citation of the text. The official `anthropic` SDK
  accumulates the output into exactly these blocks.
- Chat clients (``web_search_options``): the citations that carry a URL become
  ``url_citation`` annotations of ``content``, the non-streamed reply's own.
- Codex on an Anthropic upstream (`ResponsesViaAnthropicStream`): each ``server_tool_use``
  web search becomes a ``web_search_call`` item with the search's query and, as its
  sources, the pages of the ``web_search_tool_result`` after it; the citations
  ``url_citation`` annotations; the official `openai` SDK rebuilds the Response.
"""

from __future__ import annotations

import random
from typing import Any

import anthropic
import httpx2 as httpx
import openai
import orjson
import pytest

from hydra_proxy import transducers
from hydra_proxy.chat.response.writer import chat_completion_from_message
from hydra_proxy.responses.context import ResponsesContext
from hydra_proxy.responses.encoder import echo_text
from hydra_proxy.responses.response.reader import message_from_response
from support import anthropic_grammar, responses_grammar
from support.implementations import ANTHROPIC_STREAMS, _native, feed_all
from support.responses_streams import RESPONSES_STREAMS

KEY = b"web-search-test-key"
RESPONSES_SEARCHES = ["pydantic-gpt5-stream-web-search.sse", "vercel-gpt5mini-web-search.jsonl"]
ANTHROPIC_SEARCH = "vercel-web-search-citations.jsonl"
CONTEXT = ResponsesContext("gpt-5", tools=[{"type": "web_search"}])


def implementations(name: str) -> list[Any]:
    classes = [getattr(transducers.PYTHON, name)]
    if _native is not None:
        classes.insert(0, getattr(_native, name))
    return classes


def make(cls: Any) -> Any:
    if cls.__name__ == "AnthropicViaResponsesStream":
        return cls("msg_search", "claude-haiku-4-5", 42, signing_key=KEY)
    return cls("resp_search", "gpt-5", 1764460800, 42, echo=echo_text(CONTEXT), signing_key=KEY)


def run_both(name: str, data: bytes, cuts: list[int]) -> bytes:
    outputs = [feed_all(make(cls), data, cuts) for cls in implementations(name)]
    assert all(out == outputs[0] for out in outputs), "native and Python outputs differ"
    return outputs[0]


def payloads(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line[6:]) for line in data.split(b"\n") if line.startswith(b"data: {")]


@pytest.mark.parametrize(
    ("name", "stream"),
    [("AnthropicViaResponsesStream", RESPONSES_STREAMS[n]) for n in RESPONSES_SEARCHES]
    + [("ResponsesViaAnthropicStream", ANTHROPIC_STREAMS[ANTHROPIC_SEARCH])],
    ids=[*RESPONSES_SEARCHES, ANTHROPIC_SEARCH],
)
def test_both_implementations_agree_at_any_split(name: str, stream: bytes) -> None:
    whole = run_both(name, stream, [])
    rng = random.Random(f"{name}{len(stream)}")
    for _ in range(25):
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(1, 40)))
        assert run_both(name, stream, cuts) == whole
    # Byte at a time through the search items.
    start = stream.find(b"web_search")
    assert run_both(name, stream, list(range(start, min(start + 3000, len(stream))))) == whole


def anthropic_message(out: bytes) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=out)

    client = anthropic.Anthropic(
        api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )
    with client.messages.stream(model="m", max_tokens=10, messages=[]) as stream:
        return stream.get_final_message()


@pytest.mark.parametrize("name", RESPONSES_SEARCHES)
def test_claude_code_gets_searches_results_and_citations(name: str) -> None:
    recorded = payloads(RESPONSES_STREAMS[name])
    searches = [
        p["item"]
        for p in recorded
        if p["type"] == "response.output_item.done" and p["item"]["type"] == "web_search_call"
    ]
    annotations = [p["annotation"] for p in recorded if p["type"].endswith("annotation.added")]
    out = run_both("AnthropicViaResponsesStream", RESPONSES_STREAMS[name], [])
    rebuilt = anthropic_grammar.check(out)
    assert rebuilt.complete and rebuilt.stop_reason == "end_turn"
    message = anthropic_message(out)
    uses = [b for b in message.content if b.type == "server_tool_use"]
    assert [u.id for u in uses] == [s["id"] for s in searches]
    assert all(u.name == "web_search" for u in uses)
    queries = [s["action"].get("query") for s in searches]
    assert [u.input.get("query") for u in uses] == queries
    results = {b.tool_use_id: b for b in message.content if b.type == "web_search_tool_result"}
    for search in searches:
        urls = [s["url"] for s in search["action"].get("sources", []) if s.get("url")]
        if urls:
            assert [r.url for r in results[search["id"]].content] == urls
        else:
            assert search["id"] not in results
    citations = [c for b in message.content if b.type == "text" for c in b.citations or ()]
    assert [(c.url, c.title) for c in citations] == [(a["url"], a["title"]) for a in annotations]
    assert all(c.type == "web_search_result_location" for c in citations)
    text = "".join(b.text for b in message.content if b.type == "text")
    done = [p for p in recorded if p["type"] == "response.output_text.done"]
    assert text == "".join(p["text"] for p in done)


def openai_response(out: bytes) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=out)

    client = openai.OpenAI(
        api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )
    with client.responses.stream(model="gpt-5", input="hi") as stream:
        return stream.get_final_response()


def test_codex_gets_web_search_calls_and_url_citations() -> None:
    recorded = payloads(ANTHROPIC_STREAMS[ANTHROPIC_SEARCH])
    starts = [p for p in recorded if p["type"] == "content_block_start"]
    search = next(p for p in starts if p["content_block"]["type"] == "server_tool_use")
    query = "".join(
        p["delta"]["partial_json"]
        for p in recorded
        if p["type"] == "content_block_delta"
        and p["index"] == search["index"]
        and p["delta"]["type"] == "input_json_delta"
    )
    cited = [
        p["delta"]["citation"]["url"]
        for p in recorded
        if p["type"] == "content_block_delta" and p["delta"]["type"] == "citations_delta"
    ]
    out = run_both("ResponsesViaAnthropicStream", ANTHROPIC_STREAMS[ANTHROPIC_SEARCH], [])
    responses_grammar.check(out)
    response = openai_response(out)
    calls = [item for item in response.output if item.type == "web_search_call"]
    assert len(calls) == 1 and calls[0].status == "completed"
    assert calls[0].action.type == "search"
    assert calls[0].action.query == orjson.loads(query)["query"]
    result = next(p for p in starts if p["content_block"]["type"] == "web_search_tool_result")
    found = [r["url"] for r in result["content_block"]["content"]]
    assert [s.url for s in calls[0].action.sources] == found and found
    assert response.output[0].type == "web_search_call"  # the search comes before the answer
    (message,) = [item for item in response.output if item.type == "message"]
    annotations = message.content[0].annotations
    assert [a.url for a in annotations] == cited and all(
        a.type == "url_citation" for a in annotations
    )
    text = message.content[0].text
    for a in annotations:
        assert 0 <= a.start_index < a.end_index <= len(text)


# -- Chat clients


def chat_annotations(out: bytes) -> tuple[str, list[dict[str, Any]]]:
    """The content and the annotations of a Chat stream, as a client accumulates them."""
    content, annotations = "", []
    for chunk in payloads(out):
        for choice in chunk.get("choices", []):
            delta = choice["delta"]
            content += delta.get("content") or ""
            annotations += delta.get("annotations", [])
    return content, annotations


def test_chat_clients_get_url_citations_as_the_non_streamed_reply_has_them() -> None:
    stream = ANTHROPIC_STREAMS[ANTHROPIC_SEARCH]
    cls = implementations("ChatViaAnthropicStream")
    outputs = [
        feed_all(c("chatcmpl-s", "claude-x", 1764460800, signing_key=KEY), stream, []) for c in cls
    ]
    assert all(out == outputs[0] for out in outputs)
    content, annotations = chat_annotations(outputs[0])
    message = anthropic_message(stream).model_dump()
    reply = chat_completion_from_message(
        message, completion_id="chatcmpl-s", model="claude-x", created=1, continuation_key=None
    )["choices"][0]["message"]
    assert content == reply["content"] and annotations == reply["annotations"]
    assert annotations, "the recording cites its search results"
    for a in annotations:
        cited = a["url_citation"]
        assert 0 <= cited["start_index"] < cited["end_index"] <= len(content)


@pytest.mark.parametrize("name", RESPONSES_SEARCHES)
def test_chat_clients_of_a_responses_search_get_its_citations(name: str) -> None:
    recorded = payloads(RESPONSES_STREAMS[name])
    urls = [p["annotation"]["url"] for p in recorded if p["type"].endswith("annotation.added")]
    cls = implementations("ChatViaResponsesStream")
    outputs = [
        feed_all(c("chatcmpl-s", "gpt-5", 1764460800, signing_key=KEY), RESPONSES_STREAMS[name], [])
        for c in cls
    ]
    assert all(out == outputs[0] for out in outputs)
    _, annotations = chat_annotations(outputs[0])
    assert [a["url_citation"]["url"] for a in annotations] == urls


@pytest.mark.parametrize("name", RESPONSES_SEARCHES)
def test_the_non_streamed_reader_makes_the_same_blocks_as_the_stream(name: str) -> None:
    recorded = payloads(RESPONSES_STREAMS[name])
    final = next(p["response"] for p in recorded if p["type"] == "response.completed")
    message = message_from_response(final, message_id="msg_search", model="m", key=KEY)
    out = run_both("AnthropicViaResponsesStream", RESPONSES_STREAMS[name], [])
    streamed = anthropic_grammar.check(out).content

    def searches(blocks: list[dict[str, Any]]) -> list[Any]:
        return [
            (b["type"], b.get("id") or b.get("tool_use_id"), b.get("input"), b.get("content"))
            for b in blocks
            if b["type"] in ("server_tool_use", "web_search_tool_result")
        ]

    def citations(blocks: list[dict[str, Any]]) -> list[Any]:
        return [c for b in blocks if b["type"] == "text" for c in b.get("citations", [])]

    assert searches(message["content"]) == searches(streamed)
    assert citations(message["content"]) == citations(streamed)
    assert searches(streamed), "the recording searches"


ODD_CONTENTS: list[tuple[str, list[str] | None]] = [  # content -> the sources (None: fails)
    ('{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}', []),
    ("[]", []),
    ("null", []),
    ('"text"', []),
    ("1.5e400", None),  # not JSON orjson reads
    ('[1,null,"x",[],{"type":"web_search_result"}]', []),
    (
        '[{"type":"web_search_result","url":7,"title":"t"},{"type":"web_search_result","url":""}]',
        [],
    ),
    (
        '[{"type":"web_search_result","url":"https://a","url":"https://b","title":null}]',
        ["https://b"],
    ),
    (
        '[{"type":"other","url":"https://c"},{"url":"https://d","type":"web_search_result"}]',
        ["https://d"],
    ),
    (
        '[{"type":"web_search_result","url":"https://\\u00e9\\ud83d\\ude00","title":"\\"q\\""}]',
        ["https://é😀"],
    ),
    (
        '[{"type":"web_search_result","url":"https://e","encrypted_content":{"deep":[1,2,{"x":1e5}]}}]',
        ["https://e"],
    ),
]


@pytest.mark.parametrize(("content", "sources"), ODD_CONTENTS)
def test_both_implementations_read_odd_results_alike(
    content: str, sources: list[str] | None
) -> None:
    use = (
        b'{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use",'
        b'"id":"srvtoolu_1","name":"web_search","input":{}}}'
    )
    result = (
        b'{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result",'
        b'"tool_use_id":"srvtoolu_1","content":' + content.encode() + b"}}"
    )
    lines = [
        b'{"type":"message_start","message":{"id":"msg_1","model":"claude-x","usage":{"input_tokens":3}}}',
        use,
        b'{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"query\\":\\"q\\"}"}}',
        b'{"type":"content_block_stop","index":0}',
        result,
        b'{"type":"content_block_stop","index":1}',
        b'{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}',
        b'{"type":"message_stop"}',
    ]
    stream = b"".join(
        b"event: " + orjson.loads(line)["type"].encode() + b"\ndata: " + line + b"\n\n"
        if not line.startswith(b'{"type":"content_block_start","index":1')
        else b"event: content_block_start\ndata: " + line + b"\n\n"
        for line in lines
    )
    out = run_both("ResponsesViaAnthropicStream", stream, [])
    end = payloads(out)[-1]
    if sources is None:
        assert end["type"] == "response.failed"
        return
    assert end["type"] == "response.completed"
    (search,) = end["response"]["output"]
    assert [s["url"] for s in search["action"].get("sources", [])] == sources
