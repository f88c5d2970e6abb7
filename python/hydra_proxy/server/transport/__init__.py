"""The HTTP transport and the worker process: the upstream HTTP/1.1 client, the worker's
services, serving (granian) and the graceful shutdown."""
