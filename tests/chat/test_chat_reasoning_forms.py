"""Thinking asked of a Chat request in any of the forms clients use reaches every upstream
as the same request: each form, written by every upstream kind's writer (the preset table
of every_kind.py), gives the body the equivalent ``reasoning_effort`` gives."""

from __future__ import annotations

from typing import Any

import pytest

from hydra_proxy.canonical.target import MessagesTarget
from hydra_proxy.chat.request.reader import messages_request_from_chat
from hydra_proxy.server.pipeline.upstream_kinds import WRITERS, BodyFor
from support.every_kind import UPSTREAMS, attempt_for

# (a form, the reasoning_effort it stands for)
FORMS: list[tuple[dict[str, Any], str]] = [
    ({"reasoning": {"effort": "high"}}, "high"),
    ({"reasoning": {"effort": "low", "enabled": True}}, "low"),
    ({"reasoning": {"enabled": True}}, "medium"),
    ({"reasoning": {}}, "medium"),
    ({"reasoning": {"enabled": False}}, "none"),
    ({"reasoning": {"effort": "minimal"}}, "minimal"),
    ({"thinking": {"type": "enabled"}, "reasoning_effort": "low"}, "low"),
    ({"enable_thinking": True}, "medium"),
    ({"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "high"}, "high"),
    ({"enable_thinking": False}, "none"),
]


def upstream_body(upstream: str, fields: dict[str, Any]) -> Any:
    attempt = attempt_for(upstream)
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}
    target = MessagesTarget(model=attempt.model)
    canonical = messages_request_from_chat(request, target, stream=False).body
    _, body = WRITERS[attempt.provider.kind](
        canonical, BodyFor(attempt, b"k" * 32, False, None, None)
    )
    return body


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize(("form", "effort"), FORMS, ids=lambda v: str(v))
def test_every_form_reaches_every_upstream(
    upstream: str, form: dict[str, Any], effort: str
) -> None:
    assert upstream_body(upstream, form) == upstream_body(upstream, {"reasoning_effort": effort})


def test_reasoning_max_tokens_is_the_budget() -> None:
    body = upstream_body("anthropic", {"reasoning": {"max_tokens": 20000}})
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 20000}
    assert body["max_tokens"] > 20000
