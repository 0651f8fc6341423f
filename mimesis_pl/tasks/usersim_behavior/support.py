"""The frozen ABCD support agent: rebuilt from the public transcript every turn.

It never sees the simulator's reasoning structurally: its only input is the public transcript
(customer turns as ``user``, its own as ``assistant``). ``ScriptedSupportAgent`` is the offline
stand-in (asks for each required field in procedure order, then states the outcome);
``OpenAISupportAgent`` is a served model. Both record every request for leak scans, return
``None`` on failure (counted) and never raise; the task turns a ``None`` into
:class:`SupportAgentUnavailable`, so the rollout is a ``task_error`` (docs/decisions.md S62).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...llm import ChatModelSettings
from ...llm.chat_model import RoleCallFailed
from ...llm.role_client import request_log
from ..base import PartnerUnavailable
from ..clients import OpenAIChatModel
from .abcd import FIELD_PHRASES
from .behaviors import Public, mentions

MAX_WORDS = 200


class SupportAgentUnavailable(PartnerUnavailable):
    """The support agent gave no reply after its retries: the rollout is a ``task_error`` (unscored, counted),
    never a shortened episode that is judged and trained (docs/decisions.md S62)."""


@dataclass
class Procedure:
    """What the scripted agent follows: fields to collect (with values) and whether a hard limit applies."""

    system_prompt: str
    required: list[tuple[str, str]] = field(default_factory=list)  # (field, true value)
    hard_limit: bool = False
    goal: str = ""


def public_messages(system_prompt: str, public: Public) -> list[dict[str, str]]:
    return [{"role": "system", "content": system_prompt}] + [
        {"role": "user" if role == "user" else "assistant", "content": text} for role, text in public
    ]


def clean_reply(text: str) -> str:
    """Strip an ``AGENT:`` label, collapse an exactly doubled reply, cut to 200 words (`` [...]``)."""
    text = re.sub(r"^\s*agent\s*:\s*", "", text.strip(), flags=re.IGNORECASE)
    if len(text) % 2 == 0:
        half = len(text) // 2
        if half > 20 and text[:half] == text[half:]:
            text = text[:half]
    words = text.split()
    return " ".join(words[:MAX_WORDS]) + " [...]" if len(words) > MAX_WORDS else text


class ScriptedSupportAgent:
    """Offline stand-in: asks for the first required field the customer has not yet given, then answers."""

    def __init__(self) -> None:
        self.failures = 0
        self.requests = request_log()

    async def respond(self, procedure: Procedure, public: Public) -> str | None:
        self.requests.append(public_messages(procedure.system_prompt, public))
        said = " ".join(text for role, text in public if role == "user")
        for name, value in procedure.required:
            if not mentions(said, value):
                return f"Could you give me your {FIELD_PHRASES.get(name, name.replace('_', ' '))}?"
        if procedure.hard_limit:
            return "I'm sorry, under our policy that is not possible for this order."
        return f"Thanks, that is all set: I have taken care of your {procedure.goal.split(' (')[0]}."

    async def aclose(self) -> None:
        pass


class OpenAISupportAgent:
    """A served support agent (per-role endpoint and model)."""

    def __init__(self, settings: ChatModelSettings) -> None:
        self.model = OpenAIChatModel(settings, "support_agent")

    @property
    def failures(self) -> int:
        return self.model.failures

    @property
    def requests(self):
        return self.model.requests

    async def respond(self, procedure: Procedure, public: Public) -> str | None:
        try:
            text = await self.model.complete(public_messages(procedure.system_prompt, public))
        except RoleCallFailed:  # counted by the client; the caller reports the agent unavailable
            return None
        return clean_reply(text) or None

    async def aclose(self) -> None:
        await self.model.aclose()


def build_support_agent(settings: ChatModelSettings) -> ScriptedSupportAgent | OpenAISupportAgent:
    return OpenAISupportAgent(settings) if settings.served else ScriptedSupportAgent()
