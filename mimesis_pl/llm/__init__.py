"""Small shared clients for OpenAI-compatible endpoints (simulated users, coaches, judges, agents)."""

from .endpoint import Endpoint, api_key, bearer_headers, http_url, openai_sdk_client
from .http import ChatCompletionsClient, RetryableError
from .settings import (
    REFERENCE_ROLE,
    ChatModelFields,
    ChatModelSettings,
    ScriptedChatSettings,
    ServedChatSettings,
    reference_role,
)

__all__ = [
    "REFERENCE_ROLE",
    "ChatCompletionsClient",
    "ChatModelFields",
    "ChatModelSettings",
    "Endpoint",
    "RetryableError",
    "ScriptedChatSettings",
    "ServedChatSettings",
    "api_key",
    "bearer_headers",
    "http_url",
    "openai_sdk_client",
    "reference_role",
]
