"""OpenAI Chat Completions (twin of rust/src/chat/): its stream decoder and encoder."""
