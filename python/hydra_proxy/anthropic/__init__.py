"""Anthropic Messages (twin of rust/src/anthropic/): its stream decoder and encoder."""
