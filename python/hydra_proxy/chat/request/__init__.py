"""Chat Completions requests: the reader (client Chat request -> canonical request) and the
writer (canonical request -> upstream Chat request). The canonical request is an Anthropic
Messages request (docs/ARCHITECTURE.md)."""
