"""Sotopia: two-agent social role-play, scored on goals and relationship.

The simulator plays one side (``eval_position``: ``agent1`` — who speaks first — by default), the partner
the other, each with its own character prompt. Both answer with a JSON action ``{"action_type", "argument"}``
(``speak | non-verbal communication | action | leave | none``); text that is not such JSON counts as speech.
Each action is shown to the other side as one line (:func:`render_action`). The episode stops after
``max_turns`` actions (15), an empty turn, a ``leave`` at action index ≥ 5, or more than two ``none`` in a row.

Score (the reported score *is* the training reward, on [0, 1]: docs/decisions.md S23): the judge gives
seven integer dimensions
on their own ranges; each is normalised to [0, 1] and averaged with weights (:data:`DIMENSIONS`):
``score = Σ w_d · (raw_d − lo_d) / (hi_d − lo_d) / Σ w_d``. Raw dimensions are logged as ``sotopia/<dim>``.
A failed judge call is ``judge_failed`` (the reference filled midpoints; S3). The reference's hack judge is
not implemented.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

from .base import RowError, TaskContext, TaskResult, extra_info, require, row_name
from .clients import JudgeRequest
from .conversation import BudgetExhausted, PolicyConversation
from .dialogue import finish, option, partner_reply, said, transcript_text

PREFIX = "sotopia"
ActionType = Literal["speak", "non-verbal communication", "action", "leave", "none"]
#: dimension → (lo, hi, weight)
DIMENSIONS: dict[str, tuple[int, int, float]] = {
    "believability": (0, 10, 0.5),
    "relationship": (-5, 5, 1.0),
    "knowledge": (0, 10, 1.0),
    "secret": (-10, 0, 0.5),
    "social_rules": (-10, 0, 0.5),
    "financial_and_material_benefits": (-5, 5, 0.5),
    "goal": (0, 10, 2.0),
}


@dataclass(frozen=True)
class SotopiaVerdict:
    """The simulated agent's episode on seven dimensions, each an integer in its range (:data:`DIMENSIONS`)."""

    #: the asked ranges; a score outside is a judge failure, not clamped (docs/decisions.md S60)
    SCORE_RANGES: ClassVar[dict[str, tuple[int, int]]] = {k: (lo, hi) for k, (lo, hi, _) in DIMENSIONS.items()}

    believability: float
    relationship: float
    knowledge: float
    secret: float
    social_rules: float
    financial_and_material_benefits: float
    goal: float


def sotopia_score(verdict: SotopiaVerdict) -> float:
    total = 0.0
    for f in fields(verdict):
        lo, hi, w = DIMENSIONS[f.name]
        total += w * (getattr(verdict, f.name) - lo) / (hi - lo)
    return total / sum(w for _, _, w in DIMENSIONS.values())


def parse_action(text: str) -> tuple[ActionType, str]:
    """A JSON action, or the text as speech; empty text is ``none``."""
    body = text.strip()
    if not body:
        return "none", ""
    try:
        data = json.loads(body.removeprefix("```json").removeprefix("```").removesuffix("```"))
    except json.JSONDecodeError:
        return "speak", body
    if not isinstance(data, dict):
        return "speak", body
    kind = str(data.get("action_type", "speak")).strip().lower()
    arg = str(data.get("argument", "")).strip()
    if kind not in ("speak", "non-verbal communication", "action", "leave", "none"):
        kind = "speak"
    return kind, arg  # type: ignore[return-value]


def render_action(name: str, kind: ActionType, arg: str) -> str:
    if kind == "speak":
        return f'{name} said: "{arg}"'
    if kind == "leave":
        return f"{name} left the conversation"
    if kind == "none":
        return f"{name} did nothing"
    return f"{name} [{kind}] {arg}"


def should_stop(kind: ActionType, index: int, nones_in_a_row: int) -> bool:
    return (kind == "leave" and index >= 5) or nones_in_a_row > 2


def character_prompt(scenario: str, name: str, other: str, profile: str, goal: str) -> str:
    return (
        f"Role-play {name} in this situation: {scenario}\nAbout you: {profile}\nYour goal (the other person does not "
        f"know it): {goal}\nYou are talking with {other}. Stay in character, behave like a real person, and pursue "
        'your goal. Each turn answer with JSON only: {"action_type": "speak" | "non-verbal communication" | "action" '
        '| "leave", "argument": "<what you say or do>"}'
    )


def judge_prompt(scenario: str, name: str, goal: str, transcript: str) -> list[dict[str, str]]:
    ranges = ", ".join(f'"{d}": <integer {lo} to {hi}>' for d, (lo, hi, _) in DIMENSIONS.items())
    return [
        {"role": "system", "content": "You evaluate one participant of a social role-play."},
        {
            "role": "user",
            "content": (
                f"Situation: {scenario}\nParticipant evaluated: {name}\nTheir private goal: {goal}\n\n"
                f"Episode:\n{transcript}\n\n"
                f"Rate {name}: how believable, how the relationship changed, knowledge gained, "
                "secrets kept (0 = kept), "
                "social rules respected (0 = none broken), material gain, and how far the goal was achieved. "
                f"Answer with JSON only: {{{ranges}}}"
            ),
        },
    ]


def _names(info: Mapping[str, Any], row: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    def pair(key: str) -> list[str]:
        value = require(info, row, key)
        value = json.loads(value) if isinstance(value, str) and value.startswith("[") else value
        if not isinstance(value, list) or len(value) != 2:
            raise RowError(f"{row_name(row)}: extra_info.{key} must list two entries (agent1, agent2)")
        return [str(v) for v in value]

    return pair("agent_names"), pair("agent_profiles"), pair("agent_goals")


def fill_names(text: str, names: list[str]) -> str:
    for i, name in enumerate(names, 1):
        text = text.replace(f"Agent{i}", name).replace(f"agent{i}", name)
    return text


class SotopiaTask:
    def __init__(self, data_source: str = "sotopia") -> None:
        self.data_source = data_source

    async def run(self, row: Mapping[str, Any], ctx: TaskContext, *, group_id: str, gen_uid: str) -> TaskResult:
        info = extra_info(row)
        names, profiles, goals = _names(info, row)
        scenario = fill_names(str(require(info, row, "scenario")), names)
        me = 1 if str(info.get("eval_position", "agent1")) == "agent2" else 0
        other = 1 - me
        prompts = [
            character_prompt(scenario, names[i], names[1 - i], profiles[i], fill_names(goals[i], names)) for i in (0, 1)
        ]
        partner = [{"role": "system", "content": prompts[other]}]
        lines: list[tuple[str, str]] = []
        pending: list[str] = ["The conversation begins."]  # lines the partner has not seen yet
        state = {"nones": 0, "partner_failures": 0}

        async def partner_turn() -> tuple[ActionType, str] | None:
            partner.append({"role": "user", "content": "\n".join(pending)})
            pending.clear()
            reply = await partner_reply(ctx, partner)
            if reply is None:
                state["partner_failures"] += 1
                return None
            partner.append({"role": "assistant", "content": reply})
            kind, arg = parse_action(reply)
            lines.append((names[other], render_action(names[other], kind, arg)))
            return kind, arg

        opening, start = "The conversation begins.", 0
        if me == 1:  # the partner opens; its first action is the simulator's first context line
            first = await partner_turn()
            opening, start = (lines[-1][1] if first else opening), 1
        conv = PolicyConversation(
            ctx.policy,
            [{"role": "system", "content": prompts[me]}, {"role": "user", "content": opening}],
            ctx.enable_think,
            sample=f"{row_name(row)} {gen_uid}",
        )
        for index in range(start, int(option(ctx, self.data_source, "max_turns", 15))):
            if index % 2 == me:
                try:
                    turn = await conv.step()
                except BudgetExhausted:
                    break
                text = said(conv, turn.text)
                if not text:
                    break
                kind, arg = parse_action(text)
                line = render_action(names[me], kind, arg)
                lines.append((f"SIMULATED {names[me]}", line))
                pending.append(line)
            else:
                action = await partner_turn()
                if action is None:
                    break
                kind, _ = action
                try:
                    conv.append([{"role": "user", "content": lines[-1][1]}])
                except BudgetExhausted:
                    break
            state["nones"] = state["nones"] + 1 if kind == "none" else 0
            if should_stop(kind, index, state["nones"]):
                break
        sub: dict[str, float] = {"partner_failures": float(state["partner_failures"])}
        score = 0.0
        if conv.turns:
            request = JudgeRequest(
                judge_prompt(scenario, names[me], goals[me], transcript_text(lines)), lines, goals[me], "SIMULATED"
            )
            verdict = await ctx.judge.judge(request, SotopiaVerdict)
            score = None if verdict is None else sotopia_score(verdict)
            if verdict is not None:
                sub.update({f.name: float(getattr(verdict, f.name)) for f in fields(verdict)})
        return finish(
            conv,
            ctx,
            row,
            data_source=self.data_source,
            prefix=PREFIX,
            group_id=group_id,
            gen_uid=gen_uid,
            score=score,
            sub=sub,
            transcript=lines,
        )


def sotopia(data_source: str) -> SotopiaTask:
    return SotopiaTask(data_source)
