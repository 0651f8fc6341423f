"""The one chat-model protocol: what every caller of a chat model (a task's partner, a suite's simulator, assistant,
agent or judge) may rely on, served or scripted.

``complete`` returns the reply's text; a call that still fails after the model's bounded retries raises (the
caller's failure type, :class:`RoleCallFailed` by default) — never ``None`` or an empty reply, which a caller could
mistake for a turn. Sampling fields left ``None`` are the model's own settings. Roles add what their callers count:
the simulator-RL roles ``failures`` and ``requests`` (:class:`~mimesis_pl.tasks.clients.Partner`), the suites'
models a ``name`` and ``revision`` for cache keys (:class:`~mimesis_pl.eval.simulator.models.SuiteModel`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

Messages = Sequence[Mapping[str, str]]


class RoleCallFailed(RuntimeError):
    """A served role's call failed after its bounded retries (a role client's default failure type)."""


@runtime_checkable
class ChatModel(Protocol):
    async def complete(
        self,
        messages: Messages,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> str:
        """The reply's text; raises once the bounded retries are spent."""
        ...

    async def aclose(self) -> None: ...
