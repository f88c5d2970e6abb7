"""OpenAI Chat Completions in, Anthropic Messages out (SPEC section 4): pure translations."""
