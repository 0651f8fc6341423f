"""What the built-in gyms' scripted user rules share.

Each gym module holds its own rule, ``scripted_reply(persona, utterances) -> UserReply``: it reads the
persona the gym wrote (the task's hidden data) and the agent's utterances so far (the last one is
being answered) and returns a public reply plus a private reasoning text that names the hidden facts
it relied on. Rules keep no state: everything is recomputed from the conversation, so the same rules
can sit behind an HTTP endpoint and give identical answers (:mod:`mimesis_pl.users.scripted`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mimesis_pl.envs.text import surface_forms
from mimesis_pl.envs.user_protocol import UserReply, UserSimulatorError

Rule = Callable[[Mapping[str, Any], Sequence[str]], UserReply]

VERDICT_TEXT = {"Yes": "Yes.", "No": "No.", "Maybe": "Maybe, partly."}
NOT_A_QUESTION = "I can only answer yes-or-no questions."


def persona_field(persona: Mapping[str, Any], key: str) -> Any:
    """``persona[key]``, or a :class:`UserSimulatorError` naming the gym and the missing field."""
    value = persona.get(key)
    if value is None:
        raise UserSimulatorError(f"scripted user: persona of {persona.get('gym')!r} lacks field {key!r}")
    return value


def named(stems: set[str], text: str) -> str:
    """The keyword stems as the words ``text`` used for them, for a reasoning text."""
    forms = surface_forms(text)
    return ", ".join(sorted(forms.get(s, s) for s in stems)) or "nothing I can check"
