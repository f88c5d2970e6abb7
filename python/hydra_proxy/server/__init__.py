"""The HTTP side: an ASGI app served by granian, and the lean upstream client (http1.py).

I/O lives here; protocol translation lives in the transducer and request modules. One
request: app (the route table) -> an Exchange (exchange.py) -> ingress (a ClientRequest
and each attempt's Plan, no I/O) -> attempts (keys, fallbacks, retries) -> reply (relay |
forward | json).
"""
