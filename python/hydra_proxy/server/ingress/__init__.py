"""Ingress: one module per client endpoint, each reading a client request into a
`ClientRequest` (server/pipeline/exchange.py) with no I/O.

Each module's `read(exchange, request, body)` gives the routing traits, whether the client
asked for a stream, and how one attempt of the decided route is planned: a passthrough
when the upstream speaks the client's protocol, else the canonical request (an Anthropic
Messages dict) through the upstream kind's writer (server/pipeline/upstream_kinds.py) and the
client's way back (its reply writer, its stream encoder's arguments).
"""
