"""Identifiers the proxy mints (passed into the transducers so output is reproducible)."""

from __future__ import annotations

import os


def message_id() -> str:
    return "msg_hydra" + os.urandom(12).hex()


def completion_id() -> str:
    return "chatcmpl-hydra" + os.urandom(12).hex()


def response_id() -> str:
    return "resp_hydra" + os.urandom(12).hex()
