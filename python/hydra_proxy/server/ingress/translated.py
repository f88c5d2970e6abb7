"""The Plan of a translated exchange, the same for every client protocol and upstream kind.

A client ingress reads its request into the canonical one and says how the canonical reply
reaches its client (`write_reply`: a Message -> the client's JSON reply; `build`: the
client's constructor arguments for the stream transducer). The upstream's side comes from
the tables by `Provider.kind` (server/upstreams.py) and the transducer from
`Implementation.transducer(upstream kind, client protocol)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import ids
from ...transducers import StreamTransducer
from ..plan import ClientProtocol, Plan
from ..upstreams import READERS, Target, write_request
from . import Context

Factory = Callable[..., StreamTransducer]


def translated(
    ctx: Context,
    canonical: dict[str, Any],
    target: Target,
    *,
    client: ClientProtocol,
    stream: bool,
    reported_model: str,
    write_reply: Callable[[dict[str, Any]], Any],
    build: Callable[[Factory], StreamTransducer],
    log: dict[str, object],
) -> Plan:
    upstream = write_request(canonical, target, stream=stream)
    kind = target.provider.kind
    out = Plan(
        url=upstream.url,
        headers=upstream.headers,
        body=upstream.body,
        client=client,
        kind="relay" if stream else "json",
        log={**log, "stream": 1} if stream else dict(log),
    )
    if stream:
        factory = ctx.impl.transducer(kind, client)
        out.transducer = lambda: build(factory)
    else:
        read = READERS[kind]
        key = target.signing_key

        def convert(reply: Any) -> Any:
            return write_reply(read(reply, ids.message_id(), reported_model, key))

        out.convert = convert
    return out
