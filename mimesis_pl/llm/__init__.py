"""Small shared clients for OpenAI-compatible endpoints (simulated users, coaches)."""

from .http import ChatCompletionsClient, RetryableError

__all__ = ["ChatCompletionsClient", "RetryableError"]
