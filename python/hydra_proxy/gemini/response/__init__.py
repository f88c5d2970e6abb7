"""Non-streamed Gemini replies: the reader (upstream ``GenerateContentResponse`` -> the
canonical Anthropic Message)."""
