"""CueGym: a shopping user whose private reasoning names what its public reply only hints at.

Built to test coached self-distillation where it should matter (docs/decisions.md A94-A97).
The user wants an item (``create_kwargs.item``) and has hidden *must-haves*, each on one public aspect
(:data:`ASPECTS`, listed in the agent's system prompt) with a hidden value. The public reply only *cues* the
open must-have ("It will get wet a lot."); the private reasoning names it ("Open: material (hinted, not asked)").
A value is revealed only when its aspect is asked. Task row: ``create_kwargs`` ``{env_name: CueGym, id, item,
musts: [{aspect, value, cue}, ...], turns}``.

Episode (scripted user, :func:`scripted_reply`; the gym referees reveals with the same pure rule,
:func:`replay`): the first question gets the first cue; asking a must-have's aspect reveals its value ("It has to
be nylon.") and the next cue ("Also, ..."); asking another aspect, the same one twice or none repeats the open cue
("As I said, ..."), so the open cue is always in the latest reply. A must-have asked before its cue is revealed too.
Choice ``answer`` ends the episode.

Reward (``reward_rule``): ``terminal`` (default) pays 1 at the answer iff it is correct, else 0 — sparse and
all-or-nothing; ``per_reveal`` (a control) pays ``0.5 / K`` per must-have revealed and 0.5 for a correct answer.
A correct answer (``answer_rule``): ``values`` (default) names every must-have value (stem match, as PersuadeGym's
keyword rule); ``revealed`` comes after every must-have was revealed, whatever it says — the decisions alone, for an
agent too small to copy the values (docs/decisions.md A98). ``cue_mode: explicit`` (the other control) makes each cue
name its aspect ("It will get wet a lot, so the material matters."), which leaves a coach note nothing private to add.

Expert (:class:`CueExpert`): knows the task's must-haves (what a coached agent learns from its notes) and asks the
open one; its :meth:`~CueExpert.uncoached` twin asks a uniformly drawn aspect not yet asked (what an agent without
a note and without the cue mapping can do). Both answer with every value revealed to them on the last turn.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from mimesis_pl.envs.base import Action, Gym, StepResult, require
from mimesis_pl.envs.expert import Expert, ExpertMove, Turn
from mimesis_pl.envs.gyms.rules import persona_field
from mimesis_pl.envs.spec import GymSpec
from mimesis_pl.envs.tasks import GymTask, TaskDataError
from mimesis_pl.envs.text import content_words, stem, words
from mimesis_pl.envs.user_protocol import UserReply, UserSimulatorError

ASPECTS: tuple[str, ...] = ("colour", "size", "material", "price")
# Two phrasings per aspect, shared by every split: what an agent learns is the cue -> aspect mapping.
CUES: Mapping[str, tuple[str, str]] = {
    "colour": ("It has to go with my other things.", "I want it to stand out at the party."),
    "size": ("It is for my tall dad.", "My son keeps growing."),
    "material": ("It will get wet a lot.", "I will wear it on muddy trails."),
    "price": ("Money is tight this month.", "I am a student."),
}
# Hidden values: every one a word the leak check flags (``is_specific``) or a number.
VALUES: Mapping[str, tuple[str, ...]] = {
    "colour": ("green", "black", "white", "purple"),
    "size": ("medium", "petite", "slim", "roomy"),
    "material": ("nylon", "wool", "leather", "denim"),
    "price": ("under 40", "under 60", "under 80", "under 100"),
}
_ASPECT_STEMS = {stem(a): a for a in ASPECTS} | {stem("color"): "colour"}

RewardRule = Literal["terminal", "per_reveal"]
AnswerRule = Literal["values", "revealed"]
CueMode = Literal["implicit", "explicit"]

PERSONA_TEMPLATE = """\
You are shopping and want the item below. Your must-haves are listed in "musts"; each has a hint ("cue").
- Never name a must-have's aspect or value unless they ask about that aspect; then say the value.
- Otherwise answer with the hint of your first must-have they have not asked about yet.
- Aspects you have no must-have on: anything is fine.
<persona>
{persona}
</persona>"""

SYSTEM_PROMPT = (
    "You help a user choose a {item}. The user may care about these aspects: {aspects}. Call the tool "
    "`interact_with_env` with choice `action` to ask about one aspect, or with choice `answer` to recommend an item "
    "that names every value the user told you. You have {turns} turns in all. Think first, between <think> and "
    "</think>."
)
OPENING = "I want to buy a {item}. Can you help me choose one?"


@dataclass(frozen=True)
class Must:
    """One hidden must-have: the aspect it is on, its value, and the public hint that cues the aspect."""

    aspect: str
    value: str
    cue: str


def read_musts(hidden: Mapping[str, Any], *, where: str) -> tuple[Must, ...]:
    """The task's must-haves, in order; a :class:`TaskDataError` naming the field for a bad row."""
    raw = require(hidden, "musts", where=where)
    if isinstance(raw, str):
        raw = json.loads(raw)
    musts = []
    for i, item in enumerate(list(raw)):
        if not isinstance(item, Mapping) or any(not str(item.get(k) or "").strip() for k in ("aspect", "value", "cue")):
            raise TaskDataError(f"{where}: musts[{i}] needs non-empty 'aspect', 'value' and 'cue', got {item!r}")
        if item["aspect"] not in ASPECTS:
            raise TaskDataError(f"{where}: musts[{i}].aspect {item['aspect']!r} is not one of {ASPECTS}")
        musts.append(Must(str(item["aspect"]), str(item["value"]), str(item["cue"])))
    if not musts or len({m.aspect for m in musts}) != len(musts):
        raise TaskDataError(f"{where}: 'musts' needs at least one must-have and distinct aspects, got {raw!r}")
    return tuple(musts)


def asked_aspect(text: str) -> str | None:
    """The first aspect a question names (``color`` counts as ``colour``), or ``None``."""
    for w in words(text):
        aspect = _ASPECT_STEMS.get(stem(w))
        if aspect is not None:
            return aspect
    return None


Event = Literal["opening", "must", "other", "again", "none"]


@dataclass(frozen=True)
class CueState:
    """What the user knows after the agent's utterances: the last event and which must-haves are revealed."""

    event: Event
    aspect: str | None  # the aspect the last utterance asked about
    revealed: tuple[int, ...]  # indices of revealed must-haves, in the order they were revealed
    hinted: tuple[int, ...]  # indices whose cue an earlier reply (before the last one) spoke
    newly: int | None  # the must-have the last utterance revealed

    def open_index(self, n_musts: int) -> int | None:
        """The first must-have not revealed yet (its cue ends the latest reply)."""
        return next((i for i in range(n_musts) if i not in self.revealed), None)


def replay(musts: Sequence[Must], utterances: Sequence[str]) -> CueState:
    """The state after ``utterances`` (the last one being answered), recomputed from the start."""
    revealed: list[int] = []
    asked: set[str] = set()
    hinted: set[int] = set()
    event: Event = "opening"
    aspect = newly = None
    for t, text in enumerate(utterances):
        if t > 0:  # the reply to the previous utterance ended with the cue of the then open must-have
            previous_open = next((i for i in range(len(musts)) if i not in revealed), None)
            if previous_open is not None:
                hinted.add(previous_open)
        aspect, newly = asked_aspect(text), None
        must = next((i for i, m in enumerate(musts) if m.aspect == aspect), None)
        if aspect is None:
            event = "opening" if t == 0 else "none"
        elif aspect in asked:
            event = "again"
        elif must is not None:
            event, newly = "must", must
            revealed.append(must)
        else:
            event = "other"
        if aspect is not None:
            asked.add(aspect)
    return CueState(event, aspect, tuple(revealed), tuple(sorted(hinted)), newly)


def cue_text(must: Must, mode: CueMode) -> str:
    """The hint for ``must`` as the user speaks it (``explicit``: with the aspect named)."""
    if mode == "explicit":
        return f"{must.cue.rstrip('.')}, so the {must.aspect} matters."
    return must.cue


def _lower_first(text: str) -> str:
    """``text`` to follow "Also, ": its first letter lower-cased, but not the pronoun "I"."""
    return text if text.startswith("I ") else text[:1].lower() + text[1:]


def public_reply(musts: Sequence[Must], state: CueState, mode: CueMode) -> str:
    """The user's public reply for ``state``: the event's sentence, then the open cue (or "That is all I need.")."""
    head = {
        "opening": "",
        "must": f"It has to be {musts[state.newly].value}." if state.newly is not None else "",
        "other": f"Anything is fine for the {state.aspect}.",
        "again": "You asked that already.",
        "none": f"Please ask about one aspect: {', '.join(ASPECTS[:-1])} or {ASPECTS[-1]}.",
    }[state.event]
    open_i = state.open_index(len(musts))
    if open_i is None:
        tail = "That is all I need."
    elif state.event == "opening":
        tail = cue_text(musts[open_i], mode)
    else:
        lead = "As I said, " if open_i in state.hinted else "Also, "
        tail = lead + _lower_first(cue_text(musts[open_i], mode))
    return f"{head} {tail}".strip()


def private_reasoning(item: str, musts: Sequence[Must], state: CueState, turns_left: int) -> str:
    """The user's reasoning: every must-have's status, the last event, the open aspect and the turns left."""
    open_i = state.open_index(len(musts))
    spoken = {*state.hinted, *([] if open_i is None else [open_i])}
    status = []
    for i, m in enumerate(musts):
        if i in state.revealed:
            how = "told them"
        elif i in spoken:
            how = f"hinted: {_lower_first(m.cue.rstrip('.'))}"
        else:
            how = "not hinted yet"
        status.append(f"{m.aspect} {m.value} ({how})")
    about = {
        "opening": "They have not asked about anything I care about.",
        "must": f"They asked about the {state.aspect}, which I care about.",
        "other": f"They asked about the {state.aspect}, which I do not care about.",
        "again": f"They asked about the {state.aspect} again.",
        "none": "They did not ask about any aspect.",
    }[state.event]
    open_line = (
        "Open: none; they know every must-have."
        if open_i is None
        else (f"Open: {musts[open_i].aspect} (hinted, not asked).")
    )
    return (
        f"I need a {item}. My must-haves: {'; '.join(status)}. {about} {open_line} Turns left for them: {turns_left}."
    )


def scripted_reply(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    """The scripted user's reply to the last question (stateless: replayed from the persona and the questions)."""
    try:
        musts = read_musts(persona, where="CueGym persona")
    except TaskDataError as err:
        raise UserSimulatorError(f"scripted user: {err}") from err
    item, turns = str(persona_field(persona, "item")), int(persona_field(persona, "turns"))
    mode = persona.get("cue_mode", "implicit")
    state = replay(musts, utterances)
    return UserReply(
        public_reply(musts, state, mode), private_reasoning(item, musts, state, max(0, turns - len(utterances)))
    )


def names_every_value(answer: str, musts: Sequence[Must]) -> bool:
    """Whether ``answer`` names every must-have's value (content-word stems, so ``under 40`` needs ``40``)."""
    said = content_words(answer)
    return all(content_words(m.value) <= said for m in musts)


def answer_reward(correct: bool, rule: RewardRule) -> float:
    """The answer step's reward: 1 (``terminal``) or 0.5 (``per_reveal``) for a correct answer, else 0."""
    if not correct:
        return 0.0
    return 1.0 if rule == "terminal" else 0.5


class CueGym(Gym):
    """Find the user's hidden must-haves from the hints they drop, then recommend with all of them."""

    env_name = "CueGym"
    data_sources = ("interact_cue",)
    choices = ("action", "answer")

    def __init__(
        self,
        *,
        user=None,
        reward_rule: RewardRule = "terminal",
        cue_mode: CueMode = "implicit",
        answer_rule: AnswerRule = "values",
    ) -> None:
        super().__init__(user=user)
        if answer_rule not in ("values", "revealed"):
            raise ValueError(f"CueGym answer_rule must be 'values' or 'revealed', got {answer_rule!r}")
        self.answer_rule: AnswerRule = answer_rule
        if reward_rule not in ("terminal", "per_reveal"):
            raise ValueError(f"CueGym reward_rule must be 'terminal' or 'per_reveal', got {reward_rule!r}")
        if cue_mode not in ("implicit", "explicit"):
            raise ValueError(f"CueGym cue_mode must be 'implicit' or 'explicit', got {cue_mode!r}")
        self.reward_rule: RewardRule = reward_rule
        self.cue_mode: CueMode = cue_mode

    async def _reset(self, task: GymTask) -> None:
        self._musts = read_musts(task.hidden, where=task.source)
        self._item = str(require(task.hidden, "item", where=task.source))
        self._turns = int(task.hidden.get("turns") or len(self._musts) + 2)
        self._questions: list[str] = []

    def _persona_prompt(self) -> str:
        persona = {
            "gym": self.env_name,
            "item": self._item,
            "musts": [m.__dict__ for m in self._musts],
            "turns": self._turns,
            "cue_mode": self.cue_mode,
        }
        return PERSONA_TEMPLATE.format(persona=json.dumps(persona, ensure_ascii=False, indent=1))

    async def _step(self, action: Action) -> StepResult:
        if action.choice == "answer":
            if self.answer_rule == "values":
                correct = names_every_value(action.content, self._musts)
            else:
                correct = len(replay(self._musts, self._questions).revealed) == len(self._musts)
            reward = answer_reward(correct, self.reward_rule)
            return self._result("Thank you, I will look at it.", reward, done=True, correct=int(reward > 0))
        reply = await self._ask_user(action.content)
        before = len(replay(self._musts, self._questions).revealed) if self._questions else 0
        self._questions.append(action.content)
        state = replay(self._musts, self._questions)
        reward = 0.0
        if self.reward_rule == "per_reveal" and len(state.revealed) > before:
            reward = 0.5 / len(self._musts)
        return self._result(reply.public, reward, user=reply, asked=state.aspect or "", revealed=len(state.revealed))


# -- the expert -----------------------------------------------------------------------------------------------
_TOLD = re.compile(r"It has to be ([^.]+)\.")
OPENING_QUESTION = "What will you use it for?"


@dataclass(frozen=True)
class CueExpert(Expert):
    """Asks what the item is for, then one aspect per turn, then recommends with every value it was told.

    Knows the task's must-haves (``musts``) when ``coached`` — the open must-have is what the coach's note names, so
    a coached trace shows an agent that reads its note; uncoached, it draws an aspect not asked yet uniformly from
    ``(seed, key, turn)`` (stateless, a trace replays identically). The item and turn budget come from the task.
    """

    musts: tuple[Must, ...]
    item: str
    turns: int
    key: str
    coached: bool = True
    seed: int = 0

    def uncoached(self) -> Expert:
        return replace(self, coached=False)

    def reading_notes(self, noted: frozenset[int]) -> Expert:
        return replace(self, coached=True)

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        t = len(history)
        if t == 0:
            return ExpertMove(Action("action", OPENING_QUESTION), "I ask what it is for.")
        told = [m.group(1).strip() for _, seen in history for m in _TOLD.finditer(seen)]
        if t >= self.turns - 1:
            # the values only, in the order told: one copy per value, the least a small agent has to learn
            content = f"I recommend: {', '.join(told)}." if told else "I recommend the usual one."
            return ExpertMove(Action("answer", content), "I recommend with what they told me.")
        asked = [a for a in (asked_aspect(action.content) for action, _ in history) if a]
        if self.coached:
            state = replay(self.musts, [action.content for action, _ in history])
            open_i = state.open_index(len(self.musts))
            aspect = self.musts[open_i].aspect if open_i is not None else _first_not_in(ASPECTS, asked)
        else:
            left = [a for a in ASPECTS if a not in asked] or list(ASPECTS)
            aspect = random.Random(f"{self.seed}/{self.key}/{t}").choice(left)
        return ExpertMove(Action("action", f"What about the {aspect}?"), f"The user cares about the {aspect}.")


def _first_not_in(options: Sequence[str], used: Sequence[str]) -> str:
    return next((o for o in options if o not in used), options[0])


def cue_expert(task: GymTask, same_gym: Sequence[GymTask]) -> CueExpert:
    musts = read_musts(task.hidden, where=task.source)
    turns = int(task.hidden.get("turns") or len(musts) + 2)
    return CueExpert(musts, str(require(task.hidden, "item", where=task.source)), turns, key=task.key)


SPEC = GymSpec(
    gym=CueGym,
    user_rule=scripted_reply,
    expert=cue_expert,
    compact_prompt=None,
)
