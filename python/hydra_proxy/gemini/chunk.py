"""Reading one Gemini stream chunk (a ``GenerateContentResponse``), the Gemini decoder's
reader (twin of rust/src/gemini/chunk.rs): only the fields the decoder uses, the whole chunk
checked before any of it is acted on, as the native reader does, so a malformed chunk
produces no partial output."""

from __future__ import annotations

from typing import Any

from ..json_read import (
    BadShape,
    opt_dict,
    opt_list,
    opt_str,
)

PartialArg = tuple[str, object]  # jsonPath, value
Call = tuple[str | None, str | None, object, list[PartialArg], bool]  # name, id, args, ...
Part = tuple[bool, str | None, str | None, Call | None, str | None]
Chunk = tuple[dict[str, Any] | None, bool, list[Part], str | None, str | None]


def _opt_bool(obj: dict[str, Any], key: str) -> bool:
    value = obj.get(key)
    if value is None or type(value) is bool:
        return value is True
    raise BadShape


def read_chunk(chunk: object) -> Chunk:
    """(usageMetadata, prompt blocked, parts, finishReason, finishMessage) or BadShape."""
    if type(chunk) is not dict:
        raise BadShape
    usage = chunk.get("usageMetadata")
    feedback = chunk.get("promptFeedback")
    reason = feedback.get("blockReason") if type(feedback) is dict else None
    blocked = type(reason) is str and reason != ""
    parts: list[Part] = []
    finish_reason = finish_message = None
    candidates = opt_list(chunk, "candidates")
    if candidates:
        candidate = candidates[0]
        if type(candidate) is not dict:
            raise BadShape
        finish_reason = opt_str(candidate, "finishReason")
        finish_message = opt_str(candidate, "finishMessage")
        content = opt_dict(candidate, "content")
        for part in (opt_list(content, "parts") if content is not None else None) or ():
            parts.append(_read_part(part))
    return usage if type(usage) is dict else None, blocked, parts, finish_reason, finish_message


def _read_part(part: object) -> Part:
    if type(part) is not dict:
        raise BadShape
    signature = opt_str(part, "thoughtSignature") or None
    call = opt_dict(part, "functionCall")
    return (
        _opt_bool(part, "thought"),
        opt_str(part, "text"),
        signature,
        _read_call(call) if call is not None else None,
        _other_text(part),
    )


def _read_call(call: dict[str, Any]) -> Call:
    partial: list[PartialArg] = []
    for arg in opt_list(call, "partialArgs") or ():
        if type(arg) is not dict:
            raise BadShape
        path = opt_str(arg, "jsonPath")
        if path is None:
            raise BadShape
        string = opt_str(arg, "stringValue")
        number = arg.get("numberValue")
        if number is not None and type(number) not in (int, float):
            raise BadShape
        flag = _opt_bool(arg, "boolValue") if arg.get("boolValue") is not None else None
        # nullValue, or a piece without a value: null.
        value = string if string is not None else number if number is not None else flag
        _opt_bool(arg, "willContinue")  # only says more pieces of the string follow
        partial.append((path, value))
    return (
        opt_str(call, "name"),
        opt_str(call, "id"),
        call.get("args"),
        partial,
        _opt_bool(call, "willContinue"),
    )


def _other_text(part: dict[str, Any]) -> str | None:
    """The text of a code, code-result or media part (as hydra_proxy.gemini.response.reader)."""
    code = opt_dict(part, "executableCode")
    source = language = output = None
    if code is not None:
        source, language = opt_str(code, "code"), opt_str(code, "language")
    result = opt_dict(part, "codeExecutionResult")
    if result is not None:
        output = opt_str(result, "output")
    media = [opt_dict(part, "inlineData"), opt_dict(part, "fileData")]
    mimes = [opt_str(m, "mimeType") if m is not None else None for m in media]
    if source is not None:
        fence = language.lower() if language and language != "LANGUAGE_UNSPECIFIED" else ""
        return f"```{fence}\n{source}\n```"
    if output is not None:
        return output
    for found, mime in zip(media, mimes, strict=True):
        if found is not None:
            return f"[Gemini returned {mime or 'media'} output, which is not shown here.]"
    return None


# -- streamed arguments ------------------------------------------------------------------
