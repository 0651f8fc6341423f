"""TurtleGym: lateral-thinking "turtle soup" puzzles.

The agent sees a title and a puzzling *surface*; the user knows the hidden *bottom* story
(``create_kwargs.bottom``). The agent asks yes/no questions (``action``, answered by the user
simulator) and tells its version of the story (``answer``).

Answers are graded by a rule, not by the simulator. The bottom story is split into key facts (its
sentences; a sentence with fewer than three content words joins the previous one). A fact scores 1
when at least 60 % of its content words appear in the answer, 0.5 at 30 %, else 0; the answer's
score is the mean over facts, in [0, 1].

Reward per ``answer`` = improvement over the best score so far (``max(0, score - best)``), 0 for
questions, so the episode score (sum) equals the best answer's score and stays in [0, 1]. The
episode ends when an answer reaches ``success_threshold`` (default 1.0, as in UserRL's training).
Feedback says how many facts an answer covered, never which text they hold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mimesis_pl.envs.base import Action, Gym, StepResult, require
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.text import content_words, overlap_fraction, question_keywords, sentences
from mimesis_pl.users.base import UserSimulator

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

    def __init__(self, *, user: UserSimulator | None = None, success_threshold: float = 1.0) -> None:
        super().__init__(user=user)
        if not 0.0 < success_threshold <= 1.0:
            raise ValueError(f"success_threshold must be in (0, 1], got {success_threshold}")
        self.success_threshold = success_threshold

    async def _reset(self, task: GymTask) -> None:
        self._title = str(task.hidden.get("title", ""))
        self._surface = str(task.hidden.get("surface", ""))
        self._bottom = str(require(task.hidden, "bottom", where=task.source))
        self._facts = story_facts(self._bottom)
        self._best = 0.0

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
