"""Non-streamed Chat Completions responses: the reader (upstream `chat.completion` -> the
canonical Anthropic Message) and the writer (canonical Message -> client `chat.completion`)."""
