"""Base of the scripted experts: what an expert sees and what it returns."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mimesis_pl.chat.think import join_think
from mimesis_pl.envs.base import Action
from mimesis_pl.envs.tool import action_to_tool_call

Turn = tuple[Action, str]  # (what the agent did, what it observed)


@dataclass(frozen=True)
class ExpertMove:
    action: Action
    thought: str

    def assistant_text(self) -> str:
        """The assistant turn as the policy would write it: ``<think>`` block, then the tool call."""
        return join_think(self.thought, action_to_tool_call(self.action))


class Expert(abc.ABC):
    """Plays one gym from the public conversation only (plus the knowledge its class documents)."""

    @abc.abstractmethod
    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove: ...


def opening_text(prompt: Sequence[Mapping[str, str]]) -> str:
    return next((str(m["content"]) for m in reversed(prompt) if m.get("role") == "user"), "")
