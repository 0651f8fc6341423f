"""The user-simulator protocol shared by every gym that talks to a user.

It lives with the gyms, which call it; :mod:`mimesis_pl.users` implements it (``users`` may import
``envs``, never the reverse).

A gym sends the simulator OpenAI-style chat messages *from the simulator's point of view*: a system
message (the persona, with the task's hidden data), then the agent's utterances as ``user`` messages
and the simulator's own earlier public replies as ``assistant`` messages. The simulator answers with a
:class:`UserReply`: the public text the agent will see and, separately, its private reasoning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class UserReply:
    """One simulator turn. ``reasoning`` is privileged: it may feed a coach, never the agent."""

    public: str
    reasoning: str | None = None


class UserSimulatorError(RuntimeError):
    """The simulator could not produce a usable reply (transport, HTTP status, malformed or empty reply).

    Gyms let it propagate; the EnvironmentManager records the episode as ``user_error``.
    """


@runtime_checkable
class UserSimulator(Protocol):
    """Anything that can play the user for one episode."""

    async def reply(self, messages: Sequence[Mapping[str, str]], *, episode_id: str) -> UserReply: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class UserProvider(Protocol):
    """What the EnvironmentManager is configured with: hands out one simulator per episode.

    ``base_url`` is the episode's own endpoint (``{shim}/ep/{episode_id}/v1``) when a shim is
    configured, else ``None``. Both built-in simulators implement this protocol themselves.
    """

    def for_episode(self, episode_id: str, base_url: str | None) -> UserSimulator: ...
