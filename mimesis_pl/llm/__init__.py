"""Small shared clients for OpenAI-compatible endpoints (simulated users, coaches, judges, agents)."""

from .endpoint import Endpoint, api_key, bearer_headers, http_url, openai_sdk_client
from .http import ChatCompletionsClient, RetryableError
from .settings import REFERENCE_ROLE, ChatModelSettings, reference_role

__all__ = [
    "REFERENCE_ROLE",
    "ChatCompletionsClient",
    "ChatModelSettings",
    "Endpoint",
    "RetryableError",
    "api_key",
    "bearer_headers",
    "http_url",
    "openai_sdk_client",
    "reference_role",
]
