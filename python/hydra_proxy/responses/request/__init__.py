"""Responses API requests: the reader (client Responses request -> canonical request) and
the writer (canonical request -> upstream Responses request)."""
