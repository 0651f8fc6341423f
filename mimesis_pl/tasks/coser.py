"""CoSER: multi-character role-play of a book scene (given-circumstance acting).

Rows: :class:`CoserRow`. The simulator plays every speaking character, each in its own conversation (its own
profile, plot, scenario and motivation); the partner plays the environment and the next-speaker predictor. Each
utterance, inner thoughts (``[...]``) removed and labelled with its speaker (:func:`speaker_line`), is shown to
every other character as context (mask 0). At most ``max_rounds`` utterances (10). The predictor's answer is read as the
reference does (:func:`parse_next_speaker`: the last "Next Speaker" line, else the text before the first ``:``, else
the whole answer) and must then be exactly another listed speaker, or ``<END CHAT>`` from round 5 on; any other
answer passes the turn to the next speaker in the scene's order (the reference drew one at random; docs/decisions.md
S48).

The judge sees the book, the major characters, the speaking characters' profiles (:func:`involved_profiles`) and
the original scene (inner thoughts removed, except the environment's), told to judge only what
follows the replayed rounds when ``continue_from`` > 0, and scores four dimensions 1–10;
``score = mean(round(100 · (int(s) − 1) / 9, 1)) / 100`` over scores the judge client has checked to be in 1–10,
as the reference casts and rounds them (:func:`coser_score`, docs/decisions.md S83).
Every character that spoke yields a trajectory with the same reward and ``gen_uid``
(``TaskResult.extra_trajectories``), so FoldGRPO counts the rollout once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from .base import Rollout, RowError, TaskResult, decoded, expect, extra_info, flag, require, row_name
from .clients import JudgeRequest
from .conversation import BudgetExhausted, PolicyConversation
from .dialogue import JudgedTask, finish, partner_reply, said, transcript_text, verdict_score

PREFIX = "coser"
ENV = "Environment"
END_CHAT = "<END CHAT>"
_THOUGHT = re.compile(r"\[[^\]]*\]")


@dataclass(frozen=True)
class CoserVerdict:
    """The focal character's performance, each an integer 1–10."""

    #: a score outside 1–10 is a judge failure, not clamped (docs/decisions.md S60)
    SCORE_RANGES: ClassVar[dict[str, tuple[int, int]]] = {
        "storyline_consistency": (1, 10),
        "anthropomorphism": (1, 10),
        "character_fidelity": (1, 10),
        "storyline_quality": (1, 10),
    }

    storyline_consistency: float
    anthropomorphism: float
    character_fidelity: float
    storyline_quality: float


def coser_score(verdict: CoserVerdict) -> float:
    """The reference's: each dimension cast to an integer (truncated), put on 0–100 and rounded to 0.1; the mean
    of the four, / 100."""
    dims = [round((int(getattr(verdict, f.name)) - 1) * 100 / 9, 1) for f in fields(verdict)]
    return sum(dims) / len(dims) / 100


def strip_thoughts(text: str) -> str:
    return re.sub(r"\s{2,}", " ", _THOUGHT.sub("", text)).strip()


_NEXT_SPEAKER = re.compile(r"next\s+speaker", re.IGNORECASE)
_LEAD = re.compile(r"^[\s#]*(?:(?:[:\-]|is\b)\s*)?", re.IGNORECASE)


def parse_next_speaker(answer: str) -> str:
    """The name a next-speaker answer gives: after the last "Next Speaker" (any case; markup stars, ``#`` and
    whitespace, then a ``:``, ``-`` or "is", skipped; the rest of that line, trailing ``.,!"'`` removed) when that
    leaves a name; else the text before the first ``:``; else the whole answer, stripped."""
    hits = list(_NEXT_SPEAKER.finditer(answer))
    if hits:
        rest = _LEAD.sub("", answer[hits[-1].end() :].replace("*", ""))
        name = rest.split("\n", 1)[0].strip().rstrip(".,!\"'").strip()
        if name:
            return name
    return answer.split(":", 1)[0].strip() if ":" in answer else answer.strip()


def next_speaker(answer: str | None, speakers: list[str], current: str, round_index: int) -> str | None:
    """The predictor's choice (:func:`parse_next_speaker`) when it is exactly another listed speaker; ``None`` (end
    the scene) for ``<END CHAT>`` from round 5 on; otherwise the next speaker in order (S48)."""
    name = parse_next_speaker(answer or "")
    if name == END_CHAT and round_index >= 5:
        return None
    if name in speakers and name != current:
        return name
    return speakers[(speakers.index(current) + 1) % len(speakers)]


def speaker_line(name: str, text: str) -> str:
    """``Name: text`` as the other characters see it, unless a line of ``text`` already starts with ``Name:`` (or
    the full-width ``Name：``), which the reference leaves as it is."""
    if any(line.strip().startswith((f"{name}:", f"{name}\uff1a")) for line in text.split("\n")):
        return text
    return f"{name}: {text}"


def reference_scene(dialogues: tuple[tuple[str, str], ...]) -> str:
    """The original scene as the judge reads it: ``Name: message`` lines, inner thoughts removed except the
    environment's."""
    return transcript_text([(who, text if who == ENV else strip_thoughts(text)) for who, text in dialogues])


@dataclass(frozen=True)
class CoserRow:
    """A CoSER row as the reference writes it: ``extra_info.circumstance`` (a dict or its JSON string) holding
    ``book``, ``scenario``, ``plot{summary, key_characters[{name, description?}]}``, ``speaking_characters_w_env``
    (the first speaks first; ``Environment`` is appended when missing), ``major_characters``,
    ``character_profiles{name: text}``, a top-level ``key_characters[{name, motivation | thought}]`` and
    ``dialogues[{character, message}]`` (the original scene, shown to the judge); ``extra_info.wo_thought``
    (default false) and ``extra_info.continue_from`` (default 0: rounds below it replay ``dialogues``).
    ``dialogues`` and every ``key_characters[].name`` are required (docs/decisions.md S42)."""

    book: str
    scenario: str
    plot: str
    speakers: tuple[str, ...]
    majors: tuple[str, ...]
    descriptions: dict[str, str]
    profiles: dict[str, str]
    motivations: dict[str, str]
    dialogues: tuple[tuple[str, str], ...]
    wo_thought: bool
    continue_from: int


def _named(items: Any, row: Mapping[str, Any], where: str, keys: tuple[str, ...]) -> dict[str, str]:
    """``name → first of keys`` over a list of ``{name, ...}`` dicts; a ``name`` is required."""
    expect(items, (list,), row, where)
    out = {}
    for i, item in enumerate(items):
        name = expect(item, (dict,), row, f"{where}[{i}]").get("name")
        if not isinstance(name, str) or not name:
            raise RowError(f"{row_name(row)}: field {where}[{i}].name is missing or not a string")
        out[name] = str(next((item[k] for k in keys if item.get(k) is not None), ""))
    return out


def parse_coser_row(row: Mapping[str, Any]) -> CoserRow:
    info = extra_info(row)
    where = "extra_info.circumstance"
    c = expect(decoded(require(info, row, "circumstance"), row, where), (dict,), row, where)

    def need(name: str, kinds: tuple[type, ...]) -> Any:
        if c.get(name) is None:
            raise RowError(f"{row_name(row)}: {where} needs field {name!r}")
        return expect(c[name], kinds, row, f"{where}.{name}")

    plot = need("plot", (dict,))
    if plot.get("summary") is None:
        raise RowError(f"{row_name(row)}: {where}.plot needs field 'summary'")
    speakers = [str(s) for s in need("speaking_characters_w_env", (list,))]
    if not [s for s in speakers if s != ENV]:
        raise RowError(f"{row_name(row)}: field {where}.speaking_characters_w_env names no character")
    profiles = need("character_profiles", (dict,))
    dialogues = []
    for i, d in enumerate(need("dialogues", (list,))):
        d = expect(d, (dict,), row, f"{where}.dialogues[{i}]")
        dialogues.append((str(d.get("character", "")), str(d.get("message", ""))))
    continue_from = info.get("continue_from") or 0
    if isinstance(continue_from, bool) or not isinstance(continue_from, int) or continue_from < 0:
        raise RowError(f"{row_name(row)}: field extra_info.continue_from must be an integer >= 0")
    if continue_from > len(dialogues):
        raise RowError(f"{row_name(row)}: extra_info.continue_from {continue_from} > {len(dialogues)} dialogues")
    return CoserRow(
        book=str(need("book", (str,))),
        scenario=str(need("scenario", (str,))),
        plot=str(plot["summary"]),
        speakers=tuple(speakers if ENV in speakers else [*speakers, ENV]),
        majors=tuple(str(m) for m in need("major_characters", (list,))),
        descriptions=_named(plot.get("key_characters") or [], row, f"{where}.plot.key_characters", ("description",)),
        profiles={str(k): str(v) for k, v in profiles.items()},
        motivations=_named(need("key_characters", (list,)), row, f"{where}.key_characters", ("motivation", "thought")),
        dialogues=tuple(dialogues),
        wo_thought=flag(info.get("wo_thought"), row, "extra_info.wo_thought"),
        continue_from=continue_from,
    )


def character_prompt(task: CoserRow, name: str) -> str:
    """The character's system prompt: who it is (the plot's description first, then its profile), the plot, the
    scene, the other speaking characters' profiles (:func:`involved_profiles`), its inner motivation, and the
    output format."""
    profiles = involved_profiles(task)
    others = "\n".join(f"- {o}: {p}" for o, p in profiles.items() if o != name)
    who = profiles.get(name, "")
    thoughts = (
        "Do not write thoughts; put actions in (parentheses)."
        if task.wo_thought
        else "Put unspoken thoughts in [brackets] (others never see them) and actions in (parentheses)."
    )
    return (
        f"You are {name} from the book {task.book}.\nWho you are: {who}\nPlot summary: {task.plot}\n"
        f"The scene: {task.scenario}\nThe other characters:\n{others or '(none)'}\n"
        f"What drives you now: {task.motivations.get(name, '')}\nSpeak and act only as {name}, in English, at most "
        f"60 words a turn. {thoughts}"
    )


def involved_profiles(task: CoserRow) -> dict[str, str]:
    """Each speaking character's profile as the scene uses it: the plot's description first, then the book's
    profile; characters with neither are left out (the environment is no character)."""
    out = {}
    for name in task.speakers:
        parts = (task.descriptions.get(name, "").strip(), task.profiles.get(name, "").strip())
        if name != ENV and any(parts):
            out[name] = "\n\n".join(t for t in parts if t)
    return out


def judge_prompt(task: CoserRow, name: str, transcript: str) -> list[dict[str, str]]:
    """The judge's request: the book, its major characters, the plot, the scene, the speaking characters' profiles,
    the original scene (:func:`reference_scene`), the role-play and, after replayed rounds, which part to judge."""
    keys = ", ".join(f'"{f.name}": <integer 1-10>' for f in fields(CoserVerdict))
    profiles = "\n".join(f"- {who}: {text}" for who, text in involved_profiles(task).items()) or "(none)"
    replayed = task.continue_from
    note = (
        f"The first {replayed} messages of the role-play repeat the original; judge only what follows them.\n"
        if replayed
        else ""
    )
    return [
        {"role": "system", "content": "You judge a role-play of a book scene."},
        {
            "role": "user",
            "content": (
                f"Book: {task.book}\nMajor characters: {', '.join(task.majors)}\nPlot: {task.plot}\n"
                f"Scene: {task.scenario}\nCharacters:\n{profiles}\n"
                f"Original dialogue (for reference):\n{reference_scene(task.dialogues)}\n\n"
                f"Role-play:\n{transcript}\n\n{note}"
                f"Rate the performance of {name}: consistency with the storyline, human-likeness, fidelity to the "
                f"character, and the quality of the story it drives. JSON only: {{{keys}}}"
            ),
        },
    ]


def environment_prompt(task: CoserRow) -> str:
    return (
        f"You narrate the environment of this scene from {task.book}: {task.scenario}\n"
        "Describe only events and surroundings, briefly."
    )


def _history(lines: list[tuple[str, str]]) -> str:
    """The scene so far as the partner reads it (no ``SIMULATED`` labels)."""
    return transcript_text([(who.removeprefix("SIMULATED "), text) for who, text in lines])


class CoserScene:
    """A scene being played: every character's own conversation (opened on its first turn), the lines each has
    not seen yet, and the transcript."""

    def __init__(self, task: CoserRow, run: Rollout) -> None:
        self.task, self.run = task, run
        self.speakers = list(task.speakers)
        self.actors = [s for s in self.speakers if s != ENV]  # every speaking character is the policy
        self.convs: dict[str, PolicyConversation] = {}
        self.pending: dict[str, list[str]] = {s: [] for s in self.actors}  # lines each character has not seen yet
        self.lines: list[tuple[str, str]] = []

    def replay(self) -> str:
        """Replay the rounds before ``continue_from`` as every character's context (docs/decisions.md S43); returns
        who speaks first after them."""
        task = self.task
        for who, message in task.dialogues[: task.continue_from]:
            self.lines.append((who, strip_thoughts(message)))
            for actor in self.actors:
                self.pending[actor].append(speaker_line(who, strip_thoughts(message)))
        if task.continue_from and task.continue_from < len(task.dialogues):
            current = task.dialogues[task.continue_from][0]
            return current if current in self.speakers else self.speakers[0]
        return self.speakers[0]

    async def character_turn(self, name: str) -> str | None:
        """``name``'s next utterance (thoughts removed), or ``None`` when the scene ends (budget spent, or an empty
        turn)."""
        opening = "\n".join(self.pending[name]) or "The scene begins."
        try:
            if name not in self.convs:
                messages = [{"role": "system", "content": character_prompt(self.task, name)}]
                self.convs[name] = self.run.conversation([*messages, {"role": "user", "content": opening}], name)
            elif self.pending[name]:
                self.convs[name].append([{"role": "user", "content": opening}])
            turn = await self.convs[name].step()
        except BudgetExhausted:
            return None
        self.pending[name] = []
        return strip_thoughts(said(self.convs[name], turn.text)) or None

    async def environment_turn(self) -> str:
        history = _history(self.lines) or "(nothing yet)"
        ask = {"role": "user", "content": f"The scene so far:\n{history}\n\nYour turn."}
        chat = [{"role": "system", "content": environment_prompt(self.task)}, ask]
        return strip_thoughts(await partner_reply(self.run.ctx, chat, what="environment"))

    async def predict_next(self, current: str, round_index: int) -> str | None:
        """The next speaker (:func:`next_speaker`), ``None`` when the predictor ends the scene."""
        ask = (
            f"Scene so far:\n{_history(self.lines)}\n\n"
            f"Who speaks next? Answer with one name from {self.speakers}, or {END_CHAT} if the scene is over."
        )
        answer = await partner_reply(self.run.ctx, [{"role": "user", "content": ask}], what="next-speaker predictor")
        return next_speaker(answer, self.speakers, current, round_index)

    async def play(self) -> None:
        """At most ``max_rounds`` utterances; each is shown to every other character."""
        current = self.replay()
        for r in range(self.task.continue_from, int(self.run.option("max_rounds", 10))):
            if current != ENV:
                text = await self.character_turn(current)
                if text is None:
                    break
                self.lines.append((f"SIMULATED {current}", text))
            else:
                text = await self.environment_turn()
                self.lines.append((ENV, text))
            for other in self.actors:
                if other != current:
                    self.pending[other].append(speaker_line(current, text))
            nxt = await self.predict_next(current, r)
            if nxt is None:
                break
            current = nxt

    def played(self) -> list[PolicyConversation]:
        """The conversations with a turn; with none, an empty one (so the row reports ``no_turns``)."""
        played = [c for c in self.convs.values() if c.turns]
        if played:
            return played
        system = {"role": "system", "content": character_prompt(self.task, self.actors[0])}
        return [self.run.conversation([system, {"role": "user", "content": "The scene begins."}])]


async def coser_rollout(task: CoserRow, run: Rollout) -> TaskResult:
    """Play the scene, then judge every character the policy played (:func:`coser_score`); one trajectory each."""
    scene = CoserScene(task, run)
    await scene.play()
    played, lines = scene.played(), scene.lines
    score: float | None = 0.0
    if played[0].turns:
        prompt = judge_prompt(task, ", ".join(scene.convs), transcript_text(lines))
        verdict = await run.ctx.judge.judge(JudgeRequest(prompt, lines, task.scenario, "SIMULATED"), CoserVerdict)
        score = verdict_score(verdict, coser_score)
    sub = {"characters": float(len(scene.convs))}
    return finish(run, played[0], score=score, sub=sub, transcript=lines, others=played[1:])


def coser(data_source: str) -> JudgedTask[CoserRow]:
    return JudgedTask(data_source, PREFIX, parse_coser_row, coser_rollout)
