"""Scripted experts: what an expert sees and returns, and the wrappers that change how it plays.

Each built-in gym keeps its expert next to its environment (:mod:`mimesis_pl.envs.gyms`). An expert
sees what an agent sees — the public prompt and the (action, observation) history — and returns an
:class:`ExpertMove`: a natural :class:`Action` plus a short thought for the ``<think>`` block. Experts
recompute everything from the history on every call (no hidden state), so a trace can be resumed
anywhere. What each expert knows beyond the conversation is stated on its class. The runner that plays
an expert through the EnvironmentManager is :mod:`mimesis_pl.envs.expert_runner` (kept apart so that this
module, which every gym imports, imports neither the manager nor the gym registry).
"""

from __future__ import annotations

import abc
import random
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

    def reading_notes(self, noted: frozenset[int]) -> Expert:
        """The expert of a coached trace, where a coach note precedes each turn in ``noted`` (itself by default)."""
        return self

    def uncoached(self) -> Expert:
        """The expert of an uncoached trace when some traces are coached: what it plays without a note (itself
        by default; an expert that knows what only a note would tell returns the twin that does not)."""
        return self


@dataclass(frozen=True)
class LapsingExpert(Expert):
    """An expert that, on a share ``rate`` of its later turns, wastes the turn restating its opening.

    A demonstrator that still succeeds (given turns to spare) but not efficiently, as real successful traces
    often do: an agent fine-tuned on its traces lapses at about ``rate``, and RL under a turn limit has a
    habit to remove. Whether turn ``t`` lapses is drawn from ``(seed, key, t)`` alone, so the expert stays
    stateless and a trace replays identically. The first turn never lapses.
    """

    expert: Expert
    rate: float
    key: str
    seed: int = 0
    thought: str = "I restate my case."

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate < 1.0:
            raise ValueError(f"lapse rate must lie in [0, 1), got {self.rate!r}")

    def lapses(self, turn: int) -> bool:
        return turn > 0 and random.Random(f"{self.seed}/{self.key}/{turn}").random() < self.rate

    def reading_notes(self, noted: frozenset[int]) -> Expert:
        return NoteFollowingExpert(self, noted)

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        if self.lapses(len(history)):
            return ExpertMove(self.expert.act(prompt, []).action, self.thought)
        return self.expert.act(prompt, history)


@dataclass(frozen=True)
class NoteFollowingExpert(Expert):
    """A lapsing expert that reads its coach: on a turn a note precedes it does not lapse.

    ``noted`` are the turns a note will precede (decided before the episode, since the note is written
    from the user's private reasoning the episode produces); the expert plays them as the underlying
    expert would, so a trace teaches "a note says the point is open: take it up, do not restate".
    """

    expert: LapsingExpert
    noted: frozenset[int]

    def lapses(self, turn: int) -> bool:
        return turn not in self.noted and self.expert.lapses(turn)

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        if len(history) in self.noted:
            return self.expert.expert.act(prompt, history)
        return self.expert.act(prompt, history)


def opening_text(prompt: Sequence[Mapping[str, str]]) -> str:
    return next((str(m["content"]) for m in reversed(prompt) if m.get("role") == "user"), "")


# Moved to expert_runner; a re-export here would bring back the circle expert -> manager -> registry -> gyms.
_MOVED = {"ExpertTurn", "ExpertTrace", "run_expert_episode"}


def __getattr__(name: str):
    if name in _MOVED:
        raise ImportError(f"mimesis_pl.envs.expert.{name} moved: import it from mimesis_pl.envs.expert_runner")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
