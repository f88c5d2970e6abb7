"""Each reasoning level reaches each Chat preset in that upstream's own form, with no loss:
for every shipped preset of the Chat kind (the table `config.presets` exports) and every
level a Responses or Chat client can ask for, the upstream request the proxy writes
(reader -> canonical -> the Chat writer, as the server runs them) carries the level as the
preset's `effort_form` says. Budgets appear only for a provider that speaks budgets."""

from __future__ import annotations

from typing import Any

import pytest

from hydra_proxy.canonical.effort import LEVELS, OPENAI_LEVELS, effort_form
from hydra_proxy.canonical.target import MessagesTarget
from hydra_proxy.canonical.thinking import DEFAULT_THINKING_BUDGETS, EFFORTS_OFF
from hydra_proxy.chat.request.reader import messages_request_from_chat
from hydra_proxy.chat.request.writer import ChatTarget, chat_request_from_messages
from hydra_proxy.config.presets import presets
from hydra_proxy.responses.request.reader import messages_request_from_responses

CHAT_PRESETS = sorted(name for name, row in presets().items() if row["kind"] == "chat")
ASKED = [level for level in LEVELS if level != "max"]  # what the OpenAI APIs let a client ask


def upstream_request(preset: str, canonical: dict[str, Any]) -> dict[str, Any]:
    row = presets()[preset]
    target = ChatTarget(
        model="m",
        reasoning=bool(row.get("reasoning", False)),
        effort_form=row.get("effort_form"),
        effort_levels=tuple(row.get("effort_levels", ())),
    )
    out: dict[str, Any] = chat_request_from_messages(canonical, target, stream=False)
    return out


def from_responses(level: str) -> dict[str, Any]:
    body = {"model": "m", "input": "think", "reasoning": {"effort": level}}
    return messages_request_from_responses(body, MessagesTarget(model="m")).body


def from_chat(level: str) -> dict[str, Any]:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "think"}],
        "reasoning_effort": level,
    }
    return messages_request_from_chat(body, MessagesTarget(model="m"), stream=False).body


EFFORT_FIELDS = ("reasoning_effort", "thinking", "enable_thinking", "thinking_budget")


@pytest.mark.parametrize("client", [from_responses, from_chat], ids=["responses", "chat"])
@pytest.mark.parametrize("level", ASKED)
@pytest.mark.parametrize("preset", CHAT_PRESETS)
def test_each_level_reaches_each_preset_in_its_form(preset: str, level: str, client: Any) -> None:
    row = presets()[preset]
    form = effort_form(bool(row.get("reasoning", False)), row.get("effort_form"))
    sent = upstream_request(preset, client(level))
    effort = {k: sent[k] for k in EFFORT_FIELDS if k in sent}
    if form == "reasoning_effort":
        levels = tuple(row.get("effort_levels", ())) or OPENAI_LEVELS
        if level in EFFORTS_OFF:
            # thinking off reaches the canonical request as "disabled": the model's default
            assert effort == {}
        elif level in levels:
            assert effort == {"reasoning_effort": level}  # as asked, never lower
        else:
            below = [x for x in levels if LEVELS.index(x) < LEVELS.index(level)]
            assert effort == {"reasoning_effort": below[-1]}
    elif form == "thinking":
        on = level not in EFFORTS_OFF
        assert effort == {"thinking": {"type": "enabled" if on else "disabled"}}
    elif form == "enable_thinking":
        if level in EFFORTS_OFF:
            assert effort == {"enable_thinking": False}
        else:
            assert effort == {
                "enable_thinking": True,
                "thinking_budget": DEFAULT_THINKING_BUDGETS[level],
            }
    else:
        assert effort == {}
    if form != "enable_thinking":
        assert "thinking_budget" not in sent  # budgets only where the provider speaks them


def test_the_levels_once_lost_arrive_as_asked() -> None:
    """The levels that went through a budget and came back one lower."""
    for preset in ("openai-reasoning", "openrouter"):
        assert upstream_request(preset, from_responses("high"))["reasoning_effort"] == "high"
        assert upstream_request(preset, from_responses("xhigh"))["reasoning_effort"] == "xhigh"
    assert upstream_request("gemini", from_chat("xhigh"))["reasoning_effort"] == "high"
    deepseek = upstream_request("deepseek", from_chat("high"))
    assert deepseek["thinking"] == {"type": "enabled"} and "reasoning_effort" not in deepseek
