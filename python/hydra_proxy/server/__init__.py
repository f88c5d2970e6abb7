"""The HTTP side: an ASGI app served by granian, and the upstream client (aiohttp).

I/O lives here; protocol translation lives in the transducer and request modules.
"""
