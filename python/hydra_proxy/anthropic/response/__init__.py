"""Non-streamed Anthropic Messages replies: the reader (an upstream's Message -> the
canonical Message) and the writer (the canonical Message -> a client's Message)."""
