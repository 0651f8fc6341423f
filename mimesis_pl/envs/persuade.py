"""PersuadeGym: change the user's mind about a claim it holds.

The agent sees only the claim; the user also holds a private argument for it
(``create_kwargs.argument``). Each agent ``answer`` is an argument; the user simulator replies and
ends its reply with a line ``Stance: <label>`` on the seven-point scale below. The stance line stays
in the observation (the agent is told where the user stands); a reply without a readable stance
leaves the stance unchanged and is counted in ``info["stance_unparsed"]``.

Reward: stances are indexed 0 (Strongly Agree, the start) to 6 (Strongly Disagree). A step earns
``max(0, index - best_index_so_far) / 6``, so only progress beyond the furthest stance reached so far
pays (UserRL paid every move relative to the previous stance, which lets an oscillating user pay
repeatedly). The episode score (sum) is ``best_index / 6`` in [0, 1]; the episode ends at Strongly
Disagree.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mimesis_pl.envs.base import Action, Gym, StepResult, require
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.users.base import UserSimulator

STANCES: tuple[str, ...] = (
    "Strongly Agree",
    "Agree",
    "Partly Agree",
    "Neutral",
    "Partly Disagree",
    "Disagree",
    "Strongly Disagree",
)
_STANCE_LINE = re.compile(r"stance\s*[:\-]\s*\**\s*([a-z ]+)", re.IGNORECASE)

PERSONA_TEMPLATE = """\
You hold the claim below, for the reasons given in "argument". Someone will argue against it.
- Reply to their latest argument in at most four sentences, speaking to them directly ("you").
- Change your position only as far as their arguments really answer your reasons; you may also hold firm.
- End every reply with a final line of the form "Stance: <label>", where <label> is exactly one of: {labels}.
- Your current stance before their first argument is "Strongly Agree".
<persona>
{persona}
</persona>"""


def parse_stance(reply: str) -> str | None:
    """The label of the last ``Stance: ...`` line of a reply, or ``None`` if there is none."""
    found = None
    for match in _STANCE_LINE.finditer(reply):
        text = " ".join(match.group(1).split()).lower()
        # Longest label first so that "strongly disagree" is not read as "disagree".
        for label in sorted(STANCES, key=len, reverse=True):
            if text.startswith(label.lower()):
                found = label
                break
    return found


def stance_line(label: str) -> str:
    return f"Stance: {label}"


class PersuadeGym(Gym):
    """Argue against the user's claim until it changes its stance."""

    env_name = "PersuadeGym"
    data_sources = ("interact_persuade",)
    choices = ("answer",)

    def __init__(self, *, user: UserSimulator | None = None) -> None:
        super().__init__(user=user)

    async def _reset(self, task: GymTask) -> None:
        self._claim = str(require(task.hidden, "claim", where=task.source))
        self._argument = str(require(task.hidden, "argument", where=task.source))
        self._stance = 0
        self._best = 0

    def _persona_prompt(self) -> str:
        persona: dict[str, Any] = {"gym": self.env_name, "claim": self._claim, "argument": self._argument}
        return PERSONA_TEMPLATE.format(
            labels=", ".join(STANCES), persona=json.dumps(persona, ensure_ascii=False, indent=1)
        )

    async def _step(self, action: Action) -> StepResult:
        reply = await self._ask_user(action.content)
        label = parse_stance(reply.public)
        info: dict[str, Any] = {"user": reply}
        if label is None:
            info["stance_unparsed"] = 1
        else:
            self._stance = STANCES.index(label)
        reward = max(0, self._stance - self._best) / (len(STANCES) - 1)
        self._best = max(self._best, self._stance)
        info["stance"] = STANCES[self._stance]
        done = self._stance == len(STANCES) - 1
        return self._result(reply.public, reward, done=done, **info)
