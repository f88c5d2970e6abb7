"""The HTTP side: an ASGI app served by granian, and the lean upstream client (http1.py).

I/O lives here; protocol translation lives in the transducer and request modules. One
exchange pipeline: app (routing) -> ingress (a Plan, no I/O) -> exchange -> relay.
"""
