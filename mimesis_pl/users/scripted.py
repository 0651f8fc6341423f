"""ScriptedUser: the offline user simulator, deterministic rules over the task's hidden data.

Gyms put the hidden data in a ``<persona>{json}</persona>`` block of the system message they send to
any simulator (an LLM reads it as part of its instructions); the scripted user parses that block
and answers with the rule of the persona's gym: each built-in gym keeps its rule, ``scripted_reply``,
next to its environment and declares it in its spec (:mod:`mimesis_pl.envs.gyms`, looked up through the
gym registry; keywords as in :mod:`mimesis_pl.envs.text`).
Every reply carries a private reasoning text naming the hidden facts it used, as a served MIMESIS
simulator's ``<think>`` block would — the material the privileged channel and the leak tests need.

The user keeps no state, so one instance serves every episode, in process or behind HTTP
(:mod:`mimesis_pl.users.scripted_server`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from mimesis_pl.chat.think import join_think
from mimesis_pl.envs.gyms.rules import Rule
from mimesis_pl.envs.registry import all_specs
from mimesis_pl.envs.user_protocol import UserReply, UserSimulatorError


def user_rules() -> dict[str, Rule]:
    """The rule of every gym that declares one (``GymSpec.user_rule``), by env_name, registered ones included
    (read at each reply: a gym registered after this module was imported has its rule too)."""
    return {spec.name: spec.user_rule for spec in all_specs() if spec.user_rule is not None}


_PERSONA = re.compile(r"<persona>\s*(\{.*?\})\s*</persona>", re.DOTALL)


def parse_persona(messages: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """The JSON persona block of the first system message."""
    for message in messages:
        if message.get("role") == "system":
            match = _PERSONA.search(str(message.get("content", "")))
            if match is None:
                break
            try:
                persona = json.loads(match.group(1))
            except json.JSONDecodeError as err:
                raise UserSimulatorError(f"scripted user: persona block is not JSON ({err.msg})") from None
            if not isinstance(persona, dict) or not isinstance(persona.get("gym"), str):
                raise UserSimulatorError("scripted user: persona block must be a JSON object with a 'gym' field")
            return persona
    raise UserSimulatorError("scripted user: no <persona>{...}</persona> block in the system message")


class ScriptedUser:
    """Offline, deterministic user for the built-in gyms (Telepathy, Turtle, Intention, Persuade, Travel).

    Args:
        think: attach the private reasoning to replies (``False`` gives a simulator without a
            privileged channel, useful to test code paths that must cope with missing reasoning).
    """

    def __init__(self, *, think: bool = True) -> None:
        self.think = think

    def for_episode(self, episode_id: str, base_url: str | None) -> ScriptedUser:
        # Stateless: the same instance serves every episode; there is no endpoint to bind.
        return self

    def respond(self, messages: Sequence[Mapping[str, str]]) -> UserReply:
        """The reply to the last message (which must come from the agent, role ``user``)."""
        if not messages or messages[-1].get("role") != "user":
            raise UserSimulatorError("scripted user: the last message must be the agent's (role 'user')")
        persona = parse_persona(messages)
        rules = user_rules()
        rule = rules.get(persona["gym"])
        if rule is None:
            raise UserSimulatorError(f"scripted user: no rules for gym {persona['gym']!r}; known: {sorted(rules)}")
        utterances = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        reply = rule(persona, utterances)
        return reply if self.think else UserReply(reply.public, None)

    def respond_text(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The reply as a served reasoning model writes it: ``<think>…</think>`` then the public text."""
        reply = self.respond(messages)
        return join_think(reply.reasoning, reply.public)

    async def reply(self, messages: Sequence[Mapping[str, str]], *, episode_id: str) -> UserReply:
        return self.respond(messages)

    async def aclose(self) -> None:
        return None
