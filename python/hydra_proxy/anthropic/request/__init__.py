"""Anthropic Messages requests: the reader (a client's request -> the canonical request,
which is the client's own) and the writer (the canonical request -> an Anthropic
upstream's)."""
