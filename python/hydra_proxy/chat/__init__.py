"""OpenAI Chat Completions: the protocol's readers, writers and field mappings."""
