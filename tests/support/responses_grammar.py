"""A strict checker of OpenAI Responses SSE output (what Codex CLI and the openai SDK read).

Independent of the code under test: it parses the bytes as SSE, checks the event grammar
(sequence numbers, response.created / in_progress first, items opened and finished one at
a time with their output_index, deltas only for the open item and adding up to the done
text, one terminal event last whose output repeats every finished item) and returns the
terminal event.
"""

from __future__ import annotations

from typing import Any

import orjson

TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def sse_events(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event, data) pairs of well-formed output; SSE comments (keepalives) are skipped."""
    assert data.endswith(b"\n\n") or not data, "output must end at an event boundary"
    events = []
    for block in data.split(b"\n\n")[:-1]:
        if block.startswith(b":"):
            continue
        lines = block.split(b"\n")
        assert len(lines) == 2, f"event must be 'event:' + 'data:' lines: {block!r}"
        assert lines[0].startswith(b"event: ") and lines[1].startswith(b"data: "), block
        name = lines[0][7:].decode()
        payload = orjson.loads(lines[1][6:])
        assert payload["type"] == name, f"data.type must repeat the event name: {block!r}"
        events.append((name, payload))
    return events


# One branch per event type of the Responses stream grammar.
def check(data: bytes) -> dict[str, Any]:  # noqa: C901
    """Check the grammar; returns the terminal event's ``response``."""
    events = sse_events(data)
    assert len(events) >= 3, "created, in_progress and an end at least"
    assert [name for name, _ in events[:2]] == ["response.created", "response.in_progress"]
    for seq, (_, ev) in enumerate(events):
        assert ev["sequence_number"] == seq, "sequence numbers are 0, 1, 2..."
    response_id = events[0][1]["response"]["id"]
    assert events[0][1]["response"]["status"] == "in_progress"
    assert events[0][1]["response"]["output"] == []
    done: list[dict[str, Any]] = []
    item: dict[str, Any] | None = None
    text = ""  # the open item's streamed text (output text, arguments, summary part)
    annotations: list[dict[str, Any]] = []
    summary_open = False
    for name, ev in events[2:-1]:
        assert name not in TERMINAL, "the end comes last"
        if name == "response.output_item.added":
            assert item is None, "one item open at a time"
            assert ev["output_index"] == len(done)
            item = ev["item"]
            assert item["id"] and item["type"] in (
                "message",
                "reasoning",
                "function_call",
                "custom_tool_call",
                "web_search_call",
            )
            text, annotations = "", []
            searching = []
            continue
        assert item is not None, f"{name} outside an item"
        assert ev["output_index"] == len(done)
        if name != "response.output_item.done":
            assert ev["item_id"] == item["id"]
        if name == "response.content_part.added":
            assert item["type"] == "message" and ev["part"]["text"] == ""
        elif name == "response.output_text.delta":
            assert item["type"] == "message" and ev["delta"]
            text += ev["delta"]
        elif name == "response.output_text.annotation.added":
            assert item["type"] == "message" and ev["annotation_index"] == len(annotations)
            annotation = ev["annotation"]
            assert annotation["type"] == "url_citation" and annotation["url"]
            assert 0 <= annotation["start_index"] <= annotation["end_index"] <= len(text)
            annotations.append(annotation)
        elif name == "response.output_text.done":
            assert ev["text"] == text
        elif name == "response.content_part.done":
            assert ev["part"]["text"] == text and ev["part"]["annotations"] == annotations
        elif name == "response.reasoning_summary_part.added":
            assert item["type"] == "reasoning" and not summary_open
            summary_open, text = True, ""
        elif name == "response.reasoning_summary_text.delta":
            assert summary_open and ev["delta"]
            text += ev["delta"]
        elif name == "response.reasoning_summary_text.done":
            assert summary_open and ev["text"] == text
        elif name == "response.reasoning_summary_part.done":
            assert summary_open and ev["part"]["text"] == text
            summary_open = False
        elif name == "response.function_call_arguments.delta":
            assert item["type"] == "function_call" and ev["delta"]
            text += ev["delta"]
        elif name == "response.function_call_arguments.done":
            assert ev["arguments"] == text
        elif name == "response.custom_tool_call_input.delta":
            assert item["type"] == "custom_tool_call" and ev["delta"]
            text += ev["delta"]
        elif name == "response.custom_tool_call_input.done":
            assert ev["input"] == text
        elif name.startswith("response.web_search_call."):
            assert item["type"] == "web_search_call"
            searching.append(name.removeprefix("response.web_search_call."))
        elif name == "response.output_item.done":
            finished = ev["item"]
            assert finished["id"] == item["id"] and finished["type"] == item["type"]
            assert not summary_open
            if item["type"] == "message":
                assert finished["content"][0]["text"] == text
                assert finished["content"][0]["annotations"] == annotations
            elif item["type"] == "function_call":
                assert finished["arguments"] == text and finished["status"] == "completed"
                assert finished["call_id"] == item["call_id"]
            elif item["type"] == "custom_tool_call":
                assert finished["input"] == text
            elif item["type"] == "web_search_call":
                assert searching == ["in_progress", "searching", "completed"]
                assert finished["status"] == "completed"
                assert finished["action"]["type"] == "search"
                assert isinstance(finished["action"]["query"], str)
            done.append(finished)
            item = None
        else:
            raise AssertionError(f"unexpected event {name}")
    name, last = events[-1]
    assert name in TERMINAL, f"the stream must end with one of {TERMINAL}, not {name}"
    response: dict[str, Any] = last["response"]
    assert response["id"] == response_id
    assert response["output"] == done, "the end repeats every finished item"
    if name == "response.failed":
        assert response["status"] == "failed" and response["error"]["code"]
        assert response["error"]["message"]
    else:
        assert item is None, "every item is finished before the end"
        assert response["status"] == name.removeprefix("response.")
        assert response["error"] is None
        usage = response["usage"]
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
        if name == "response.incomplete":
            assert response["incomplete_details"]["reason"]
    return response
