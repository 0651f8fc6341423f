"""Sotopia: two-agent social role-play, scored on goals and relationship.

Rows: :class:`SotopiaRow`. The simulator plays one side (``eval_position``: ``agent1`` — who speaks first — by
default), the partner the other, each with its own character prompt (its own background; the other's is unknown).
Both answer with a JSON action ``{"action_type", "argument"}`` (``speak | non-verbal communication | action |
leave``), read leniently (:func:`parse_action`: raw newlines inside strings are escaped, else the longest JSON value
in the text is used); anything that is not such an action — an unknown type, ``none`` included — is speech with the
whole text, so a ``none`` action never happens. Each action is shown to the other side as one line
(:func:`render_action`). The episode stops after ``max_turns`` actions (15), an empty simulator turn (an empty
partner reply is a ``task_error``, S40), or a ``leave`` at action index ≥ 5 (docs/decisions.md S45).

Score (the reported score *is* the training reward, on [0, 1]: docs/decisions.md S23): the judge gives
seven integer dimensions
on their own ranges; each is normalised to [0, 1] and averaged with weights (:data:`DIMENSIONS`):
``score = Σ w_d · (raw_d − lo_d) / (hi_d − lo_d) / Σ w_d``, each raw score first cast to an integer (truncated) as
the reference casts it (:func:`integer_verdict`, S83). Raw dimensions are logged as ``sotopia/<dim>``.
The judge sees the scenario, the relationship, both participants' backgrounds and goals, and the episode.
A failed judge call is ``judge_failed`` (the reference filled midpoints; S3). The reference's hack judge is
not implemented.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

from .base import Rollout, RowError, TaskContext, TaskResult, decoded, expect, extra_info, require, row_name
from .clients import JudgeRequest
from .conversation import BudgetExhausted, PolicyConversation
from .dialogue import JudgedTask, finish, partner_reply, said, transcript_text, verdict_score

PREFIX = "sotopia"
OPENING = "The conversation begins."  # both sides' first context line (the reference's start marker)
ActionType = Literal["speak", "non-verbal communication", "action", "leave"]
ACTION_TYPES: tuple[ActionType, ...] = ("speak", "non-verbal communication", "action", "leave")
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


def integer_verdict(verdict: SotopiaVerdict) -> SotopiaVerdict:
    """The verdict with every dimension cast to an integer as the reference's ``int(raw)`` does (7.5 → 7, −2.5 → −2)."""
    return SotopiaVerdict(**{f.name: float(int(getattr(verdict, f.name))) for f in fields(verdict)})


def sotopia_score(verdict: SotopiaVerdict) -> float:
    total = 0.0
    for f in fields(verdict):
        lo, hi, w = DIMENSIONS[f.name]
        total += w * (getattr(verdict, f.name) - lo) / (hi - lo)
    return total / sum(w for _, _, w in DIMENSIONS.values())


def escape_newlines_in_strings(text: str) -> str:
    """``text`` with every raw newline inside a JSON string literal written as the escape ``\\n`` (models often
    break a long ``argument`` over lines, which strict JSON rejects). Newlines outside strings are kept."""
    out, inside, escaped = [], False, False
    for ch in text:
        if inside and ch == "\n":
            out.append("\\n")
        else:
            out.append(ch)
        if escaped:
            escaped = False
        elif ch == "\\" and inside:
            escaped = True
        elif ch == '"':
            inside = not inside
    return "".join(out)


def lenient_json(text: str) -> Any | None:
    """The JSON value a model meant: the whole text (newlines in strings escaped) when it parses, else the longest
    JSON value (by its compact serialisation, the first of equals) that decodes at some position of the text, else
    ``None``. A value must start exactly at a position; the scan resumes after each value it decodes."""
    text = escape_newlines_in_strings(text)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    decoder, found, start = json.JSONDecoder(), [], 0
    while start < len(text):
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start += 1
            continue
        found.append(value)
        start = max(end, start + 1)
    return max(found, key=lambda v: len(json.dumps(v)), default=None)


def parse_action(text: str) -> tuple[ActionType, str]:
    """A turn's action: the JSON action in it (:func:`lenient_json`) when it is a mapping whose ``action_type`` is
    one of :data:`ACTION_TYPES` (matched ignoring case and surrounding space), else ``speak`` with the whole
    (stripped) text. ``none``, an unknown type or a JSON value that is no mapping are speech (docs/decisions.md
    S45). Callers end the episode on an empty turn before parsing it."""
    body = text.strip()
    data = lenient_json(body) if body else None
    if isinstance(data, dict):
        kind = str(data.get("action_type", "speak")).strip().lower()
        if kind in ACTION_TYPES:
            arg = data.get("argument")
            return kind, ("" if arg is None else str(arg)).strip()  # type: ignore[return-value]
    return "speak", body


def render_action(name: str, kind: ActionType, arg: str) -> str:
    if kind == "speak":
        return f'{name} said: "{arg}"'
    if kind == "leave":
        return f"{name} left the conversation"
    return f"{name} [{kind}] {arg}"


def should_stop(kind: ActionType, index: int) -> bool:
    """A ``leave`` ends the episode from action index 5 on (earlier it is shown and the episode goes on)."""
    return kind == "leave" and index >= 5


def character_prompt(task: SotopiaRow, i: int) -> str:
    """Agent ``i``'s prompt: the scenario, both participants, its own background (the other's is unknown), the
    relationship and its private goal."""
    name, other = task.names[i], task.names[1 - i]
    relationship = f"\nRelationship: {task.relationship}" if task.relationship else ""
    return (
        f"Role-play {name} in this situation: {task.scenario}\nParticipants: {task.names[0]} and {task.names[1]}\n"
        f"About you: {task.backgrounds[i]}\nAbout {other}: Unknown{relationship}\nYour goal (the other person does "
        f"not know it): {task.goals[i]}\nYou are talking with {other}. Stay in character, behave like a real person, "
        'and pursue your goal. Each turn answer with JSON only: {"action_type": "speak" | "non-verbal communication" '
        '| "action" | "leave", "argument": "<what you say or do>"}'
    )


def judge_prompt(task: SotopiaRow, i: int, transcript: str) -> list[dict[str, str]]:
    """The judge's request for agent ``i``: the scenario, the relationship, both participants' backgrounds and
    goals (the judge, unlike the participants, sees both), and the episode."""
    ranges = ", ".join(f'"{d}": <integer {lo} to {hi}>' for d, (lo, hi, _) in DIMENSIONS.items())
    name, other = task.names[i], task.names[1 - i]
    relationship = f"\nRelationship: {task.relationship}" if task.relationship else ""
    return [
        {"role": "system", "content": "You evaluate one participant of a social role-play."},
        {
            "role": "user",
            "content": (
                f"Situation: {task.scenario}{relationship}\nParticipant evaluated: {name}\n"
                f"{name}'s background: {task.backgrounds[i]}\n{name}'s private goal: {task.goals[i]}\n"
                f"The other participant: {other}\n{other}'s background: {task.backgrounds[1 - i]}\n"
                f"{other}'s private goal: {task.goals[1 - i]}\n\nEpisode:\n{transcript}\n\n"
                f"Rate {name}: how believable, how the relationship changed, knowledge gained, "
                "secrets kept (0 = kept), "
                "social rules respected (0 = none broken), material gain, and how far the goal was achieved. "
                f"Answer with JSON only: {{{ranges}}}"
            ),
        },
    ]


@dataclass(frozen=True)
class SotopiaRow:
    """A Sotopia row as the reference writes it: ``extra_info.agent1_name``/``agent2_name``/``scenario`` (str,
    required), ``agent{1,2}_background``, ``agent{1,2}_goal``, ``relationship`` (str, default ``""``),
    ``eval_position`` (``agent1`` — the policy speaks first — unless it says otherwise).

    Documented aliases (the package's earlier shape): ``agent_names``/``agent_profiles``/``agent_goals`` as
    two-entry lists or JSON strings of them (docs/decisions.md S42).
    """

    names: tuple[str, str]
    backgrounds: tuple[str, str]
    goals: tuple[str, str]
    scenario: str
    relationship: str
    me: int  # 0: the policy is agent 1; 1: agent 2


def _pair(info: Mapping[str, Any], row: Mapping[str, Any], key: str, alias: str, required: bool) -> tuple[str, str]:
    """``(agent1_<key>, agent2_<key>)``, or the two-entry list ``alias`` (a list or its JSON string)."""
    firsts = [f"agent1_{key}", f"agent2_{key}"]
    if any(info.get(k) is not None for k in firsts) or info.get(alias) is None:
        values = [require(info, row, k) if required else info.get(k) or "" for k in firsts]
        for name, value in zip(firsts, values):
            expect(value, (str,), row, f"extra_info.{name}")
        return values[0], values[1]
    value = decoded(info[alias], row, f"extra_info.{alias}")
    if not isinstance(value, list) or len(value) != 2:
        raise RowError(f"{row_name(row)}: field extra_info.{alias} must list two entries (agent1, agent2)")
    return str(value[0]), str(value[1])


def parse_sotopia_row(row: Mapping[str, Any]) -> SotopiaRow:
    info = extra_info(row)
    names = _pair(info, row, "name", "agent_names", required=True)
    scenario = fill_names(str(expect(require(info, row, "scenario"), (str,), row, "extra_info.scenario")), names)
    goals = _pair(info, row, "goal", "agent_goals", required=False)
    return SotopiaRow(
        names=names,
        backgrounds=_pair(info, row, "background", "agent_profiles", required=False),
        goals=(fill_names(goals[0], names), fill_names(goals[1], names)),
        scenario=scenario,
        relationship=str(info.get("relationship") or ""),
        me=0 if str(info.get("eval_position") or "agent1") == "agent1" else 1,
    )


def fill_names(text: str, names: tuple[str, str]) -> str:
    for i, name in enumerate(names, 1):
        text = text.replace(f"Agent{i}", name).replace(f"agent{i}", name)
    return text


class _Partner:
    """The partner's side of the episode: its chat, the policy's lines it has not seen yet, the shared transcript."""

    def __init__(self, ctx: TaskContext, prompt: str, name: str, lines: list[tuple[str, str]]) -> None:
        self.ctx, self.name, self.lines = ctx, name, lines
        self.chat = [{"role": "system", "content": prompt}]
        self.pending: list[str] = [OPENING]

    async def act(self) -> ActionType:
        """The partner's next action, added to the transcript (a failed call raises PartnerUnavailable, S40)."""
        self.chat.append({"role": "user", "content": "\n".join(self.pending)})
        self.pending.clear()
        reply = await partner_reply(self.ctx, self.chat)
        self.chat.append({"role": "assistant", "content": reply})
        kind, arg = parse_action(reply)
        self.lines.append((self.name, render_action(self.name, kind, arg)))
        return kind


async def _policy_act(conv: PolicyConversation, name: str, partner: _Partner) -> ActionType | None:
    """The policy's next action, added to the transcript and queued for the partner; ``None`` ends the episode
    (the length budget is spent, or the turn says nothing)."""
    try:
        turn = await conv.step()
    except BudgetExhausted:
        return None
    text = said(conv, turn.text)
    if not text:
        return None
    kind, arg = parse_action(text)
    line = render_action(name, kind, arg)
    partner.lines.append((f"SIMULATED {name}", line))
    partner.pending.append(line)
    return kind


async def play_sotopia(task: SotopiaRow, run: Rollout) -> tuple[PolicyConversation, list[tuple[str, str]]]:
    """The episode: the two sides act in turn until ``max_turns`` actions, an empty policy turn, the length budget
    or a late ``leave`` (:func:`should_stop`). Returns the policy's conversation and the transcript lines."""
    names, me = task.names, task.me
    lines: list[tuple[str, str]] = []
    partner = _Partner(run.ctx, character_prompt(task, 1 - me), names[1 - me], lines)
    opening, start = OPENING, 0
    if me == 1:  # the partner opens; the simulator sees the start marker, then the partner's first action
        await partner.act()
        opening, start = f"{OPENING}\n\n{lines[-1][1]}", 1
    conv = run.conversation(
        [{"role": "system", "content": character_prompt(task, me)}, {"role": "user", "content": opening}]
    )
    for index in range(start, int(run.option("max_turns", 15))):
        if index % 2 == me:
            kind = await _policy_act(conv, names[me], partner)
            if kind is None:
                break
        else:
            kind = await partner.act()
            try:
                conv.append([{"role": "user", "content": lines[-1][1]}])
            except BudgetExhausted:
                break
        if should_stop(kind, index):
            break
    return conv, lines


async def sotopia_rollout(task: SotopiaRow, run: Rollout) -> TaskResult:
    """Play the episode, then judge the policy's side on the seven dimensions (:func:`sotopia_score`)."""
    conv, lines = await play_sotopia(task, run)
    if not conv.turns:  # nothing to judge: no_turns
        return finish(run, conv, score=0.0, transcript=lines)
    request = JudgeRequest(judge_prompt(task, task.me, transcript_text(lines)), lines, task.goals[task.me], "SIMULATED")
    verdict = await run.ctx.judge.judge(request, SotopiaVerdict)
    verdict = None if verdict is None else integer_verdict(verdict)
    sub = {} if verdict is None else {f.name: float(getattr(verdict, f.name)) for f in fields(verdict)}
    if sub:  # the reference's sotopia/eval_avg: the raw mean, whose tenth is its all/score (SOUL's Overall, S82)
        sub["eval_avg"] = sum(sub.values()) / len(sub)
    return finish(run, conv, score=verdict_score(verdict, sotopia_score), sub=sub, transcript=lines)


def sotopia(data_source: str) -> JudgedTask[SotopiaRow]:
    return JudgedTask(data_source, PREFIX, parse_sotopia_row, sotopia_rollout)
