"""IntentionGym: clarify a vague request by asking the user about its missing details.

The agent sees a vague task (``create_kwargs.task``); the hidden ``missing_details`` (description,
importance 1–3, options) come from UserRL's intention JSON, passed as ``details_paths`` (default: the
compact copy ``assets/gyms/intention_details.json``). The user simulator knows one preferred option
per detail (picked deterministically from the task id) and answers the agent's questions.

Coverage is judged by a rule by default (the offline grader, :func:`covered_details`): each detail has
keywords (content words of its description and options); a question covers a detail when it names at
least one of them that is not a word of the task itself, unless what it names is better explained by
another detail. With ``judge=`` (a served endpoint, :mod:`.judging`) coverage is judged as UserRL does:
the judge sees the task, the question and the still-uncovered details (index, description, importance,
example inquiry — no options, no preferences) and returns the indices covered.

Reward per question (``reward_rule``; docs/decisions.md A51), with importance weights
``w = {3: 1.0, 2: 0.7, 1: 0.4}`` over the newly covered set ``N`` (0 when ``N`` is empty):

- ``"userrl"`` (default, UserRL's rule): ``max(0, max(w[i] for i in N) - multi_detail_penalty * (len(N) - 1))``.
  UserRL lets the episode sum grow past 1 (three details: 1.0 + 0.7 + 0.7); here the base class caps the
  sum at 1 (a known defect not repeated), so episodes whose UserRL sum stays within 1 score alike.
- ``"share"`` (ours): ``sum(w[i] for i in N) / W * (1 - multi_detail_penalty) ** (len(N) - 1)`` with ``W``
  the weights' sum over the task: covering every detail one by one scores exactly 1.

The episode ends once every detail is covered.

Scripted user (:func:`scripted_reply`): when the question is about a missing detail (the coverage rule
above), the user states its wish for it ("About the budget for the trip: Low."); otherwise it has no
preference. Expert (:class:`IntentionExpert`): asks about one aspect per turn, most important first.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mimesis_pl.envs.assets import bundled_gym_file
from mimesis_pl.envs.base import Action, Gym, StepResult, TaskDataError, require
from mimesis_pl.envs.expert import Expert, ExpertMove, Turn, opening_text
from mimesis_pl.envs.gyms.intention_judge import judge_coverage_messages, judged_indices
from mimesis_pl.envs.gyms.judging import VerdictReading, check_reading, make_judge
from mimesis_pl.envs.gyms.rules import persona_field
from mimesis_pl.envs.spec import GymSpec, UserRLPackage
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.text import QUESTION_FILLER, content_words, question_keywords, stem
from mimesis_pl.envs.user_protocol import UserReply, UserSimulator

if TYPE_CHECKING:
    from mimesis_pl.llm import ChatModelSettings

IMPORTANCE_WEIGHT = {3: 1.0, 2: 0.7, 1: 0.4}
# Words that say nothing about *which* detail is meant.
_GENERIC = frozenset(
    stem(w) for w in "user prefer preferred specific particular desired want need detail details information".split()
)
# A question's filler words never count as keywords (see question_keywords), so a detail's cannot either.
_FILLER = QUESTION_FILLER | frozenset(stem(w) for w in QUESTION_FILLER)

PERSONA_TEMPLATE = """\
You asked an AI assistant for help with the task below, but your request left out some details. \
Your actual wishes for those details are listed under "details" (aspect and your preference).
- Reply as this person, in one or two sentences, to what the assistant just asked.
- Share a preference only when the question is about that aspect; do not list all your wishes at once.
- If the question is about something not listed, say you have no particular preference about it.
- Do not solve the task yourself and do not mention this list.
<persona>
{persona}
</persona>"""


@dataclass(frozen=True)
class MissingDetail:
    description: str
    importance: int
    options: tuple[str, ...]
    inquiry: str = ""  # UserRL's example question for the detail (shown to a served coverage judge)


@dataclass(frozen=True)
class DetailKeys:
    """Keywords of one detail: ``full`` (its description and options) and ``core`` (minus the task's words)."""

    core: frozenset[str]
    full: frozenset[str]


def detail_keysets(task_text: str, details: Sequence[tuple[str, Sequence[str]]]) -> list[DetailKeys]:
    """Keywords per detail; ``details`` are ``(description, options)`` pairs."""
    task_words = content_words(task_text)
    keys = []
    for description, options in details:
        full = {w for w in content_words(" ".join([description, *options])) if w.isalpha()} - _GENERIC - _FILLER
        full = full or content_words(description)
        keys.append(DetailKeys(core=frozenset((full - task_words) or full), full=frozenset(full)))
    return keys


def covered_details(question: str, keys: Sequence[DetailKeys], already: set[int]) -> list[int]:
    """Indices of not-yet-covered details that ``question`` is about.

    A detail is a candidate when the question names one of its core keywords. A candidate whose
    named keywords are all also named for another candidate is *explained* by that one (a strict
    subset, or the same words making up a smaller share of its keywords) and does not count; every
    other candidate does. Covered details take part in this comparison, so that a question about an
    old detail does not count for a new one through a shared word.
    """
    asked = question_keywords(question)
    hits = {i: asked & k.full for i, k in enumerate(keys) if asked & k.core}

    def explained(i: int) -> bool:
        share_i = len(hits[i]) / len(keys[i].full)
        return any(
            hits[i] < hits[j] or (hits[i] == hits[j] and len(hits[j]) / len(keys[j].full) > share_i)
            for j in hits
            if j != i
        )

    return [i for i in hits if i not in already and not explained(i)]


def preferred_option(task_id: str, index: int, options: Sequence[str]) -> str:
    """The user's wish for detail ``index``: a fixed pick among the options (stable across runs)."""
    if not options:
        return "no strong preference"
    digest = hashlib.sha256(f"{task_id}:{index}".encode()).digest()
    return str(options[int.from_bytes(digest[:4], "big") % len(options)])


@lru_cache(maxsize=8)
def _load_details_file(path: str) -> dict[str, tuple[MissingDetail, ...]]:
    try:
        records = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise TaskDataError(f"cannot read intention data {path}: {err}") from None
    if not isinstance(records, list):
        raise TaskDataError(f"{path}: expected a JSON list of intention records")
    table: dict[str, tuple[MissingDetail, ...]] = {}
    for i, record in enumerate(records):
        where = f"{path}: record {i}"
        rid = str(require(record, "id", where=where))
        details = []
        for j, raw in enumerate(require(record, "missing_details", where=f"{where} ({rid})")):
            at = f"{where} ({rid}) missing_details[{j}]"
            try:
                importance = int(require(raw, "importance", where=at))
            except (TypeError, ValueError):
                raise TaskDataError(
                    f"{at}: field 'importance' must be 1, 2 or 3, got {raw.get('importance')!r}"
                ) from None
            if importance not in IMPORTANCE_WEIGHT:
                raise TaskDataError(f"{at}: field 'importance' must be 1, 2 or 3, got {importance}")
            options = tuple(str(o) for o in (raw.get("options") or []))
            description = str(require(raw, "description", where=at))
            details.append(MissingDetail(description, importance, options, str(raw.get("inquiry") or "")))
        table[rid] = tuple(details)
    return table


def load_details(paths: Sequence[str | Path]) -> dict[str, tuple[MissingDetail, ...]]:
    """Missing details by task id, merged over UserRL-format intention files."""
    merged: dict[str, tuple[MissingDetail, ...]] = {}
    for path in paths:
        merged.update(_load_details_file(str(Path(path))))
    return merged


class IntentionGym(Gym):
    """Ask clarifying questions until every missing detail of a vague request is known."""

    env_name = "IntentionGym"
    data_sources = ("interact_intention",)
    choices = ("action",)

    def __init__(
        self,
        *,
        user: UserSimulator | None = None,
        details_paths: Sequence[str | Path] | None = None,
        multi_detail_penalty: float = 0.2,
        reward_rule: Literal["userrl", "share"] = "userrl",
        judge: ChatModelSettings | Mapping[str, Any] | None = None,
        off_prompt_choices: Literal["userrl", "refuse"] = "userrl",
        verdicts: VerdictReading = "userrl",
    ) -> None:
        super().__init__(user=user)
        if not 0.0 <= multi_detail_penalty < 1.0:
            raise ValueError(f"multi_detail_penalty must be in [0, 1), got {multi_detail_penalty}")
        if reward_rule not in ("userrl", "share"):
            raise ValueError(f"reward_rule must be 'userrl' or 'share', got {reward_rule!r}")
        self.reward_rule = reward_rule
        self.judge = make_judge(judge, gym=self.env_name)
        self.verdicts = check_reading(verdicts, where=self.env_name)
        if off_prompt_choices not in ("userrl", "refuse"):
            raise ValueError(f"off_prompt_choices must be 'userrl' or 'refuse', got {off_prompt_choices!r}")
        # UserRL reads any choice as a question; ``refuse`` takes only the offered one (A87)
        self.also_accepts = ("answer", "search") if off_prompt_choices == "userrl" else ()
        self.details_paths = (
            [Path(p) for p in details_paths] if details_paths else [bundled_gym_file("intention_details.json")]
        )
        self.multi_detail_penalty = multi_detail_penalty

    async def _reset(self, task: GymTask) -> None:
        self._task_id = str(require(task.hidden, "id", where=task.source))
        self._task_text = str(require(task.hidden, "task", where=task.source))
        self._category = str(task.hidden.get("category", ""))
        details = load_details(self.details_paths).get(self._task_id)
        if not details:
            raise TaskDataError(
                f"{task.source}: intention id {self._task_id!r} not found in {[str(p) for p in self.details_paths]}"
            )
        self._details = details
        self._keysets = detail_keysets(self._task_text, [(d.description, d.options) for d in details])
        self._weight_total = sum(IMPORTANCE_WEIGHT[d.importance] for d in details)
        self._covered: set[int] = set()

    def _persona_prompt(self) -> str:
        persona: dict[str, Any] = {
            "gym": self.env_name,
            "category": self._category,
            "task": self._task_text,
            "details": [
                {
                    "aspect": d.description,
                    "options": list(d.options),
                    "preference": preferred_option(self._task_id, i, d.options),
                }
                for i, d in enumerate(self._details)
            ],
        }
        return PERSONA_TEMPLATE.format(persona=json.dumps(persona, ensure_ascii=False, indent=1))

    async def aclose(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()

    async def _step(self, action: Action) -> StepResult:
        if self.judge is not None:
            remaining = [i for i in range(len(self._details)) if i not in self._covered]
            messages = judge_coverage_messages(
                self._task_text,
                action.content,
                self._details,
                remaining,
                category=self._category,
                exchanges=self._dialogue,
            )
            new = await self.judge.ask(messages, lambda data: judged_indices(data, remaining, self.verdicts))
        else:
            new = covered_details(action.content, self._keysets, self._covered)
        if self.reward_rule == "share":
            new = list(dict.fromkeys(new))  # our rule counts each detail once
        importances = [self._details[i].importance for i in new]
        if self.reward_rule == "userrl":
            reward = userrl_coverage_reward(importances, self.multi_detail_penalty)
        else:
            reward = share_coverage_reward(importances, self._weight_total, self.multi_detail_penalty)
        self._covered.update(new)
        reply = await self._ask_user(action.content)
        done = len(self._covered) == len(self._details)
        return self._result(reply.public, reward, done=done, user=reply, covered=sorted(new))


def userrl_coverage_reward(importances: Sequence[int], penalty: float) -> float:
    """UserRL's reward for one question: the top importance weight minus ``penalty`` per extra detail."""
    if not importances:
        return 0.0
    return min(1.0, max(0.0, max(IMPORTANCE_WEIGHT[i] for i in importances) - penalty * (len(importances) - 1)))


def share_coverage_reward(importances: Sequence[int], weight_total: float, penalty: float) -> float:
    """Our reward: the covered details' share of the task's weight, 20 % off per extra detail bundled."""
    if not importances:
        return 0.0
    return sum(IMPORTANCE_WEIGHT[i] for i in importances) / weight_total * (1.0 - penalty) ** (len(importances) - 1)


def scripted_reply(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    """The user's wish for each detail the last question newly covers, or that it has no preference."""
    task = str(persona_field(persona, "task"))
    details = list(persona_field(persona, "details"))
    keysets = detail_keysets(task, [(str(d["aspect"]), [str(o) for o in d.get("options", [])]) for d in details])
    covered: set[int] = set()
    for earlier in utterances[:-1]:
        covered.update(covered_details(earlier, keysets, covered))
    new = covered_details(utterances[-1], keysets, covered)
    wishes = "; ".join(f"{d['aspect']}: {d['preference']}" for d in details)
    reasoning = f"My request: {task} What I have in mind but did not say: {wishes}."
    if new:
        answers = " ".join(f"About {_as_mine(details[i]['aspect'])}: {details[i]['preference']}." for i in new)
        told = ", ".join(str(details[i]["aspect"]) for i in new)
        return UserReply(answers, f"{reasoning} This question is about {told}, so I tell them what I want there.")
    if not question_keywords(utterances[-1]):
        return UserReply(
            "Could you ask me something more specific about what I need?",
            f"{reasoning} The message asks nothing concrete.",
        )
    return UserReply(
        "I don't have a particular preference about that.",
        f"{reasoning} The question does not touch any of these details, so I have nothing to add.",
    )


def _as_mine(aspect: str) -> str:
    text = aspect.strip()
    for prefix in ("User's ", "user's ", "The user's ", "the user's "):
        if text.startswith(prefix):
            return "my " + text[len(prefix) :]
    return "the " + text[:1].lower() + text[1:]


_VAGUE_TASK = re.compile(r"initial vague task description:\s*(.+)", re.IGNORECASE)


class IntentionExpert(Expert):
    """Asks about one aspect per turn, most important first, offering the usual options as examples.

    Knows the aspects to clarify (description + usual options), as a domain expert would; never the
    user's preferences. It words each question so that, under the gym's coverage rule, it touches
    exactly the one aspect it is about (examples that would also touch another aspect are left out).
    """

    def __init__(self, aspects: Sequence[tuple[str, Sequence[str]]]) -> None:
        self.aspects = [(str(d), [str(o) for o in opts]) for d, opts in aspects]

    @classmethod
    def for_task(cls, task: GymTask, *, details_paths: Sequence[str | Path] | None = None) -> IntentionExpert:
        paths = list(details_paths) if details_paths else [bundled_gym_file("intention_details.json")]
        details = load_details(paths).get(str(require(task.hidden, "id", where=task.source)), ())
        ordered = sorted(details, key=lambda d: -d.importance)
        return cls([(d.description, d.options) for d in ordered])

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        opening = opening_text(prompt)
        match = _VAGUE_TASK.search(opening)
        keysets = detail_keysets(match.group(1) if match else opening, self.aspects)
        covered: set[int] = set()
        for action, _ in history:
            covered.update(covered_details(action.content, keysets, covered))
        for i, (description, options) in enumerate(self.aspects):
            if i in covered:
                continue
            question = self._question(i, description, options, keysets, covered)
            if question is not None:
                phrase = _aspect_phrase(description)
                return ExpertMove(
                    Action("action", question), f"The request leaves {phrase} open; I ask about that one thing."
                )
        return ExpertMove(
            Action("action", "Is there anything else about your request I should know?"),
            "I have asked about every aspect I can think of.",
        )

    @staticmethod
    def _question(i: int, description: str, options: Sequence[str], keysets, covered: set[int]) -> str | None:
        phrase = _aspect_phrase(description)
        safe = [o for o in options if set(covered_details(o, keysets, covered)) <= {i}]
        drafts = [f"Could you tell me about {phrase}?"]
        if len(safe) > 1:
            drafts.insert(0, f"Could you tell me about {phrase}? For example: {', '.join(safe[:-1])} or {safe[-1]}?")
        elif safe:
            drafts.insert(0, f"Could you tell me about {phrase}? For example: {safe[0]}?")
        exact = [q for q in drafts if covered_details(q, keysets, covered) == [i]]
        if exact:
            return exact[0]
        touching = [q for q in drafts if i in covered_details(q, keysets, covered)]
        return min(touching, key=lambda q: len(covered_details(q, keysets, covered))) if touching else None


def _aspect_phrase(description: str) -> str:
    text = description.strip().rstrip(".")
    for prefix in ("The user's ", "the user's ", "User's ", "user's "):
        if text.startswith(prefix):
            return "your " + text[len(prefix) :]
    return "the " + text[:1].lower() + text[1:]


SPEC = GymSpec(
    gym=IntentionGym,
    user_rule=scripted_reply,
    expert=lambda task, same_gym: IntentionExpert.for_task(task),
    compact_prompt=(
        "The user gave a vague task. Call the tool `interact_with_env` with choice `action` and one clarifying "
        "question as content, about one missing detail at a time. Think first, between <think> and </think>."
    ),
    userrl=UserRLPackage("intentiongym", "IntentionEnv"),
)
