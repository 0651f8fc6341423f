"""Small shared clients for OpenAI-compatible endpoints (simulated users, coaches, judges, agents)."""

from .endpoint import Endpoint, api_key, bearer_headers, http_url, openai_sdk_client
from .http import ChatCompletionsClient, RetryableError

__all__ = [
    "ChatCompletionsClient",
    "Endpoint",
    "RetryableError",
    "api_key",
    "bearer_headers",
    "http_url",
    "openai_sdk_client",
]
