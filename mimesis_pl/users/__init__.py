"""User simulators: the protocol, an OpenAI-compatible HTTP client and an offline scripted user."""

from typing import Any

from mimesis_pl.users.base import UserProvider, UserReply, UserSimulator, UserSimulatorError

__all__ = ["OpenAIUser", "ScriptedUser", "UserProvider", "UserReply", "UserSimulator", "UserSimulatorError"]


def __getattr__(name: str) -> Any:
    # Lazy: the scripted user imports the gym modules, which import this package's base module.
    if name == "ScriptedUser":
        from mimesis_pl.users.scripted import ScriptedUser

        return ScriptedUser
    if name == "OpenAIUser":
        from mimesis_pl.users.openai_user import OpenAIUser

        return OpenAIUser
    raise AttributeError(f"module 'mimesis_pl.users' has no attribute {name!r}")
