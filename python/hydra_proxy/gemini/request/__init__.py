"""Gemini requests: the writer (canonical request -> upstream Gemini request). Gemini is
no client protocol of this proxy, so there is no reader."""
