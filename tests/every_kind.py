"""A proxy config with one provider of each upstream kind, all on one mock upstream (its
``{url}``), the key in ``UP_KEY``; tests add their routes after it."""

EVERY_KIND = """
[server]
provider = "chat"

[providers.chat]
kind = "openai"
base_url = "{url}/v1"
api_key_env = "UP_KEY"

[providers.responses]
kind = "responses"
base_url = "{url}/v1"
api_key_env = "UP_KEY"

[providers.claude]
kind = "anthropic"
base_url = "{url}"
api_key_env = "UP_KEY"

[providers.gemini]
kind = "gemini"
base_url = "{url}/v1beta"
api_key_env = "UP_KEY"
"""
