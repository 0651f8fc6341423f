"""TurtleGym: lateral-thinking "turtle soup" puzzles.

The agent sees a title and a puzzling *surface*; the user knows the hidden *bottom* story
(``create_kwargs.bottom``). The agent asks yes/no questions (``action``, answered by the user
simulator) and tells its version of the story (``answer``).

With ``judge=`` (a served endpoint, :mod:`.judging`) answers are graded as UserRL does: the judge sees
the surface, the bottom, the story's evaluation criteria (statements of UserRL's
``all_stories_refined.json``, given as ``stories_path``; weights withheld) and the answer, and scores
each criterion 0, 0.5 or 1; the answer's score is the weight-sum, and the feedback lists the criteria
it covers, as UserRL's does.

Without a judge (the offline default) answers are graded by a rule. The bottom story is split into key facts (its
sentences; a sentence with fewer than three content words joins the previous one). A fact scores 1
when at least 60 % of its content words appear in the answer, 0.5 at 30 %, else 0; the answer's
score is the mean over facts, in [0, 1].

Reward per ``answer`` = improvement over the best score so far (``max(0, score - best)``), 0 for
questions, so the episode score (sum) equals the best answer's score and stays in [0, 1]. The
episode ends when an answer reaches ``success_threshold`` (default 1.0, as in UserRL's training).
Feedback says how many facts an answer covered, never which text they hold.

Scripted user (:func:`scripted_reply`): the same keyword rule as Telepathy against the hidden story
(title, surface and bottom), "Yes." from 60 %. Expert (:class:`TurtleExpert`): a player who knows a
list of classic stories and narrows them down by asking.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimesis_pl.envs.base import Action, Gym, StepResult, TaskDataError, require
from mimesis_pl.envs.expert import ExpertMove, Turn, opening_text
from mimesis_pl.envs.gyms.cards import CardExpert, make_card
from mimesis_pl.envs.gyms.judging import chat, field_of, make_judge
from mimesis_pl.envs.gyms.rules import NOT_A_QUESTION, VERDICT_TEXT, named, persona_field
from mimesis_pl.envs.spec import GymSpec, UserRLPackage
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.text import content_words, overlap_fraction, question_keywords, sentences
from mimesis_pl.envs.user_protocol import UserReply, UserSimulator
from mimesis_pl.llm import RetryableError

if TYPE_CHECKING:
    from mimesis_pl.llm import ChatModelSettings

FULL_MATCH = 0.6
PARTIAL_MATCH = 0.3

PERSONA_TEMPLATE = """\
You host a lateral-thinking puzzle. The player knows only the title and the surface; you know the \
full hidden story below. The player asks yes-or-no questions to work out what really happened.
- Answer each question according to the hidden story with "Yes", "No" or "Maybe" (when it is partly \
true or the story does not say), in at most one short sentence.
- Never tell the story, quote it, or volunteer facts the player has not asked about.
- If a message is not a yes-or-no question, say briefly that you only answer yes-or-no questions.
<persona>
{persona}
</persona>"""


@dataclass(frozen=True)
class StoryFact:
    text: str
    keywords: frozenset[str]


def story_facts(bottom: str) -> list[StoryFact]:
    """Key facts of a hidden story: its sentences, short ones merged into the one before."""
    merged: list[str] = []
    for sentence in sentences(bottom):
        if merged and len(content_words(sentence)) < 3:
            merged[-1] = f"{merged[-1]} {sentence}"
        else:
            merged.append(sentence)
    if merged and len(merged) > 1 and len(content_words(merged[0])) < 3:
        merged[1] = f"{merged[0]} {merged[1]}"
        merged.pop(0)
    return [StoryFact(text, frozenset(content_words(text))) for text in merged if content_words(text)]


def grade_story(answer: str, facts: list[StoryFact]) -> tuple[float, int]:
    """``(score in [0, 1], number of fully covered facts)`` of an answer against the key facts."""
    if not facts:
        return 0.0, 0
    said = content_words(answer)
    total, full = 0.0, 0
    for fact in facts:
        share = overlap_fraction(set(fact.keywords), said)
        if share >= FULL_MATCH:
            total, full = total + 1.0, full + 1
        elif share >= PARTIAL_MATCH:
            total += 0.5
    return total / len(facts), full


def yes_no_for(question: str, surface: str, bottom: str) -> tuple[str, set[str], set[str]]:
    """The scripted host's answer: "Yes" at >= 60 % keyword overlap with the story, "No" at none, else "Maybe"."""
    asked = question_keywords(question)
    if not asked:
        return "", asked, set()
    known = content_words(f"{surface} {bottom}")
    share = overlap_fraction(asked, known)
    verdict = "Yes" if share >= FULL_MATCH else "No" if share == 0 else "Maybe"
    return verdict, asked, asked & known


class TurtleGym(Gym):
    """Uncover the hidden story behind a puzzling surface by asking yes/no questions."""

    env_name = "TurtleGym"
    data_sources = ("interact_turtlegym",)
    choices = ("action", "answer")

    def __init__(
        self,
        *,
        user: UserSimulator | None = None,
        success_threshold: float = 1.0,
        judge: ChatModelSettings | Mapping[str, Any] | None = None,
        stories_path: str | Path | None = None,
    ) -> None:
        super().__init__(user=user)
        if not 0.0 < success_threshold <= 1.0:
            raise ValueError(f"success_threshold must be in (0, 1], got {success_threshold}")
        self.success_threshold = success_threshold
        self.judge = make_judge(judge, gym=self.env_name)
        if self.judge is not None and not stories_path:
            raise ValueError("TurtleGym: a judge needs stories_path (UserRL's all_stories_refined.json: the criteria)")
        self.stories_path = Path(stories_path) if stories_path else None

    async def aclose(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()

    async def _reset(self, task: GymTask) -> None:
        self._title = str(task.hidden.get("title", ""))
        self._surface = str(task.hidden.get("surface", ""))
        self._bottom = str(require(task.hidden, "bottom", where=task.source))
        self._facts = story_facts(self._bottom)
        self._best = 0.0
        self._criteria: tuple[Criterion, ...] = ()
        if self.judge is not None and self.stories_path is not None:
            found = load_criteria(str(self.stories_path)).get(self._title.strip().lower())
            if not found:
                raise TaskDataError(f"{task.source}: story {self._title!r} has no criteria in {self.stories_path}")
            self._criteria = found

    def _persona_prompt(self) -> str:
        persona: dict[str, Any] = {
            "gym": self.env_name,
            "title": self._title,
            "surface": self._surface,
            "story": self._bottom,
        }
        return PERSONA_TEMPLATE.format(persona=json.dumps(persona, ensure_ascii=False, indent=1))

    async def _step(self, action: Action) -> StepResult:
        if action.choice == "action":
            reply = await self._ask_user(action.content)
            return self._result(reply.public, user=reply)
        if self.judge is not None:
            return await self._judged(action.content)
        score, full = grade_story(action.content, self._facts)
        reward = max(0.0, score - self._best)
        self._best = max(self._best, score)
        n = len(self._facts)
        if score >= self.success_threshold - 1e-9:
            return self._result(
                f"Your story matches the hidden story (score {score:.2f}). Well done!", reward, done=True, score=score
            )
        return self._result(
            f"Your story fully covers {full} of {n} key points of the hidden story (score {score:.2f}). "
            "Keep asking questions or refine your story.",
            reward,
            score=score,
        )

    async def _judged(self, answer: str) -> StepResult:
        assert self.judge is not None
        messages = judge_story_messages(self._surface, self._bottom, self._criteria, answer)
        marks = await self.judge.ask(messages, lambda data: criterion_marks(data, len(self._criteria)))
        score = weighted_score(self._criteria, marks)
        reward = max(0.0, score - self._best)
        self._best = max(self._best, score)
        done = score >= self.success_threshold - 1e-9
        return self._result(covered_feedback(self._criteria, marks), reward, done=done, score=score, grader="judge")


@dataclass(frozen=True)
class Criterion:
    """One evaluation criterion of a story (UserRL's ``evaluation`` entry): statement and weight."""

    statement: str
    weight: float


@lru_cache(maxsize=4)
def load_criteria(path: str) -> dict[str, tuple[Criterion, ...]]:
    """UserRL's ``all_stories_refined.json`` as lower-cased ``new_title`` → criteria (weights sum to 1)."""
    try:
        records = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise TaskDataError(f"cannot read story data {path}: {err}") from None
    table: dict[str, tuple[Criterion, ...]] = {}
    for key, story in records.items() if isinstance(records, dict) else enumerate(records):
        where = f"{path}: story {key}"
        title = str(require(story, "new_title", where=where))
        items = require(story, "evaluation", where=where)
        try:
            table[title.strip().lower()] = tuple(Criterion(str(c["statement"]), float(c["score"])) for c in items)
        except (KeyError, TypeError, ValueError):
            raise TaskDataError(f"{where}: field 'evaluation' must be a list of {{statement, score}}") from None
    return table


JUDGE_SYSTEM = (
    "You grade a player's explanation of a lateral-thinking puzzle against its hidden story, criterion by "
    "criterion of the evaluation protocol. Give each criterion exactly one of 0 (wrong or missing), 0.5 "
    "(partly right) or 1.0 (right), in the protocol's order, and say briefly which parts are right without "
    "revealing the hidden story or the protocol.\n"
    'Reply with a JSON object: {"scores": [{"statement": "<criterion as given>", "thought": "<why>", '
    '"score": 0 | 0.5 | 1.0}, ...], "feedback": "<short, to the player>"}'
)


def judge_story_messages(surface: str, bottom: str, criteria: Sequence[Criterion], answer: str) -> list[dict[str, str]]:
    """What UserRL's story grader sees: surface, bottom, the criteria statements (no weights), the answer."""
    protocol = json.dumps([{"statement": c.statement} for c in criteria], ensure_ascii=False, indent=1)
    user = (
        f"Surface:\n{surface}\n\nHidden story (bottom):\n{bottom}\n\nThe player's story:\n{answer.strip()}"
        f"\n\nEvaluation protocol:\n{protocol}"
    )
    return chat(JUDGE_SYSTEM, user)


def criterion_marks(data: Mapping[str, Any], n: int) -> list[float]:
    """The judge's per-criterion marks, each 0, 0.5 or 1; a wrong count or value is retried."""
    scores = field_of(data, "scores")
    if not isinstance(scores, list) or len(scores) != n:
        raise RetryableError(f"judge gave {len(scores) if isinstance(scores, list) else 'no'} scores for {n} criteria")
    marks = []
    for item in scores:
        value = item.get("score") if isinstance(item, Mapping) else item
        if isinstance(value, bool) or not isinstance(value, (int, float)) or float(value) not in (0.0, 0.5, 1.0):
            raise RetryableError(f"judge score must be 0, 0.5 or 1, got {str(value)[:20]!r}")
        marks.append(float(value))
    return marks


def weighted_score(criteria: Sequence[Criterion], marks: Sequence[float]) -> float:
    """UserRL's story score: sum of weight x mark (0..1)."""
    return sum(c.weight * m for c, m in zip(criteria, marks, strict=True))


def covered_feedback(criteria: Sequence[Criterion], marks: Sequence[float]) -> str:
    """The criteria marked fully right, as UserRL's feedback lists them."""
    covered = [c.statement for c, m in zip(criteria, marks, strict=True) if m == 1.0]
    if not covered:
        return "Your story does not cover any of the evaluation points yet."
    return (
        "Your story covers these evaluation points:\n"
        + "\n".join(f"- {s}" for s in covered)
        + "\nThere may be more to uncover: keep asking questions and refine your story."
    )


def scripted_reply(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    """The scripted host's answer to the last utterance, with reasoning quoting the hidden story."""
    surface, story = str(persona.get("surface", "")), str(persona_field(persona, "story"))
    question = utterances[-1]
    verdict, asked, matched = yes_no_for(question, surface, story)
    known = f"The hidden story: {story}"
    if not verdict:
        return UserReply(NOT_A_QUESTION, f"{known} The message asks nothing I can check against the story.")
    reasoning = (
        f"{known} The question is about {named(asked, question)}; the story contains "
        f"{named(matched, question) if matched else 'none of that'}, so I answer {verdict}."
    )
    return UserReply(VERDICT_TEXT[verdict], reasoning)


_TITLE = re.compile(r"^Title:\s*(.*)$", re.MULTILINE)
_SURFACE = re.compile(r"^Surface:\s*(.*?)\n(?:Try to uncover|$)", re.MULTILINE | re.DOTALL)


class TurtleExpert(CardExpert):
    """Turtle-soup player who knows a list of classic stories (title, surface, solution).

    Narrows the stories it knows by title and surface, asks keyword questions while more than one
    fits, confirms distinctive facts of the remaining story, then tells it.
    """

    def __init__(self, cards: Sequence[tuple[str, str, str]], *, confirmations: int = 2) -> None:
        super().__init__(
            [make_card(t, b, s, not_keywords=content_words(f"{t} {s}")) for t, s, b in cards], confirmations
        )

    @classmethod
    def from_tasks(cls, tasks: Iterable[GymTask], **kwargs) -> TurtleExpert:
        cards = [
            (str(t.hidden.get("title", "")), str(t.hidden.get("surface", "")), str(t.hidden["bottom"]))
            for t in tasks
            if t.env_name == "TurtleGym"
        ]
        return cls(cards, **kwargs)

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        opening = opening_text(prompt)
        title_match, surface_match = _TITLE.search(opening), _SURFACE.search(opening)
        title = title_match.group(1).strip() if title_match else ""
        surface = surface_match.group(1).strip() if surface_match else ""
        known = [c for c in self.cards if c.title == title] or [c for c in self.cards if c.cue and c.cue == surface]
        asked: set[str] = set(content_words(opening))
        cards, questions = self._narrow(
            known or list(self.cards),
            history,
            asked,
            lambda q, c: yes_no_for(q, c.cue, c.text)[0],
            lambda story, c: story == c.text,
        )
        if not cards:
            return ExpertMove(
                Action("answer", "I cannot work out what happened."), "No story I know fits these answers."
            )
        split = self._split_keyword(cards, asked) if len(cards) > 1 else None
        if split is not None:
            return ExpertMove(
                Action("action", f"Does the story involve {split[1]}?"),
                f"Several explanations fit; whether {split[1]} plays a part tells them apart.",
            )
        card = cards[0]
        confirm = self._distinctive(card, asked, 2)
        if questions < self.confirmations and len(confirm) == 2:
            return ExpertMove(
                Action("action", f"Does the story involve {confirm[0]} and {confirm[1]}?"),
                f"I suspect what happened; checking whether {confirm[0]} and {confirm[1]} matter.",
            )
        return ExpertMove(Action("answer", card.text), "The answers fit together; I tell the whole story.")


SPEC = GymSpec(
    gym=TurtleGym,
    user_rule=scripted_reply,
    expert=lambda task, same_gym: TurtleExpert.from_tasks(same_gym),
    userrl=UserRLPackage("turtlegym", "StoryEnv", task_field="title", eval_config=(("success_threshold", 1.0),)),
)
