"""Non-streamed Responses replies: the reader (upstream ``response`` -> the canonical
Anthropic Message) and the writer (canonical Message -> client ``response``)."""
