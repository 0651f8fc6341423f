"""Small shared clients for OpenAI-compatible endpoints (simulated users, coaches, judges, agents): the one
chat-model protocol (:class:`ChatModel`), the one role client (:class:`RoleClient`), the role settings and the
reply readers."""

from .chat_model import ChatModel, RoleCallFailed
from .endpoint import Endpoint, api_key, bearer_headers, http_url, openai_sdk_client
from .http import ChatCompletionsClient, RetryableError
from .role_client import RoleClient
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
    "ChatModel",
    "ChatModelFields",
    "ChatModelSettings",
    "Endpoint",
    "RetryableError",
    "RoleCallFailed",
    "RoleClient",
    "ScriptedChatSettings",
    "ServedChatSettings",
    "api_key",
    "bearer_headers",
    "http_url",
    "openai_sdk_client",
    "reference_role",
]
