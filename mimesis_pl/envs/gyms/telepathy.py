"""TelepathyGym: twenty-questions style guessing of a hidden entity.

The user thinks of an entity (``reward_model.title``, described by ``reward_model.ground_truth``); the
agent asks yes/no questions (``action``) answered by the user simulator and guesses (``answer``).

Guesses are judged by a rule by default (the offline grader): a guess is correct when every content
word of the entity's name appears in it, simple plurals folded (``"a kiwi fruit"`` matches ``Kiwi``); for a
person (category ``famous_person``, ``historical_figure``, ``fictional_character``, …) the surname alone
also counts, as UserRL's judge accepts it (``"Einstein"`` matches ``Albert Einstein``; docs/decisions.md A50).
With ``judge=`` (a served endpoint, :mod:`.judging`) the guess is judged as UserRL does: the judge sees
the hidden entity description and the guess only, answers Yes/No (Yes = exactly right or clearly
equivalent), and its feedback is the observation.

Reward: 1.0 for the first correct guess (the episode ends), 0.0 for questions and wrong guesses.
Episode score = 0 or 1.

Scripted user (:func:`scripted_reply`): "Yes." when at least half of the question's keywords describe
the entity (name and hidden description), "No." when none do, "Maybe, partly." in between.
Expert (:class:`TelepathyExpert`): twenty questions against a list of known entities.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimesis_pl.envs.base import Action, Gym, StepResult, TaskDataError, require
from mimesis_pl.envs.expert import ExpertMove, Turn, opening_text
from mimesis_pl.envs.gyms.cards import CardExpert, make_card
from mimesis_pl.envs.gyms.judging import VerdictReading, chat, check_reading, make_judge, verdict_label
from mimesis_pl.envs.gyms.rules import NOT_A_QUESTION, VERDICT_TEXT, named, persona_field
from mimesis_pl.envs.spec import GymSpec, UserRLPackage
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.text import STOPWORDS, content_words, overlap_fraction, question_keywords, stem, words
from mimesis_pl.envs.user_protocol import UserReply, UserSimulator

if TYPE_CHECKING:
    from mimesis_pl.llm import ChatModelSettings

_ARTICLES = frozenset({"a", "an", "the"})

PERSONA_TEMPLATE = """\
You are playing a guessing game as the one who holds the secret. You are thinking of the entity \
described below; the other player asks yes-or-no questions to find out what it is.
- Answer each question truthfully about this entity, starting with "Yes", "No" or "Maybe", in at most \
one short sentence.
- Never say the entity's name or give away its description unless the player has already named it.
- If a message is not a yes-or-no question, say briefly that you can only answer yes-or-no questions.
<persona>
{persona}
</persona>"""


def entity_keywords(title: str, description: str) -> set[str]:
    """What the entity "has": content words of its name and hidden description."""
    return content_words(f"{title} {description}")


def yes_no_for(question: str, title: str, description: str) -> tuple[str, set[str], set[str]]:
    """The scripted answer to a question: ``("Yes"|"No"|"Maybe"|"", asked, matched)``.

    "Yes" when at least half of the question's keywords describe the entity, "No" when none do,
    "Maybe" in between; "" when the question has no content words at all.
    """
    asked = question_keywords(question)
    if not asked:
        return "", asked, set()
    known = entity_keywords(title, description)
    matched = asked & known
    share = overlap_fraction(asked, known)
    verdict = "Yes" if share >= 0.5 else "No" if share == 0 else "Maybe"
    return verdict, asked, matched


# Categories of UserRL's entities that are people: a surname identifies them (A50).
PERSON_CATEGORIES = frozenset(
    "famous_person historical_figure historical_person fictional_character modern_figure composer person "
    "scientist artist musician athlete".split()
)


def guess_is_correct(guess: str, title: str, category: str = "") -> bool:
    """Every content word of the name (simple plurals folded) appears in the guess; for a person
    (``category`` in :data:`PERSON_CATEGORIES`) its last name word alone suffices."""
    title_words = words(title)
    name = [stem(w) for w in title_words if w not in STOPWORDS] or [stem(w) for w in title_words]
    if not name:
        return False
    said = {stem(w) for w in words(guess)}
    if category.strip().lower().replace(" ", "_") in PERSON_CATEGORIES and len(name) > 1 and name[-1] in said:
        return True
    return all(w in said for w in name) or _joined(guess) == _joined(title)


def _joined(text: str) -> str:
    return "".join(w for w in words(text) if w not in _ARTICLES)


@lru_cache(maxsize=4)
def load_entities(path: str) -> dict[str, str]:
    """UserRL's ``all_entities_refined.json`` as title → hidden description."""
    try:
        records = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise TaskDataError(f"cannot read entity data {path}: {err}") from None
    return {str(r["title"]): str(r["target_entity"]) for r in records if r.get("title") and r.get("target_entity")}


class TelepathyGym(Gym):
    """Guess the entity the user is thinking of by asking yes/no questions."""

    env_name = "TelepathyGym"
    data_sources = ("interact_telepathygym",)
    choices = ("action", "answer")

    def __init__(
        self,
        *,
        user: UserSimulator | None = None,
        entities_path: str | Path | None = None,
        judge: ChatModelSettings | Mapping[str, Any] | None = None,
        verdicts: VerdictReading = "userrl",
    ) -> None:
        super().__init__(user=user)
        # Only needed for rows without reward_model.ground_truth (the UserRL parquet rows all have it).
        self.entities_path = Path(entities_path) if entities_path else None
        self.judge = make_judge(judge, gym=self.env_name)
        self.verdicts = check_reading(verdicts, where=self.env_name)

    async def aclose(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()

    async def _reset(self, task: GymTask) -> None:
        self._title = str(require(task.hidden, "title", where=task.source))
        description = task.hidden.get("ground_truth")
        if not description and self.entities_path is not None:
            description = load_entities(str(self.entities_path)).get(self._title)
        if not description:
            raise TaskDataError(
                f"{task.source}: no hidden description for {self._title!r} (reward_model.ground_truth is empty"
                + ("" if self.entities_path else " and no entities_path was given")
                + ")"
            )
        self._description = str(description)
        self._category = str(task.hidden.get("category", ""))

    def _persona_prompt(self) -> str:
        persona: dict[str, Any] = {"gym": self.env_name, "entity": self._title, "description": self._description}
        return PERSONA_TEMPLATE.format(persona=json.dumps(persona, ensure_ascii=False, indent=1))

    async def _step(self, action: Action) -> StepResult:
        if action.choice == "action":
            reply = await self._ask_user(action.content)
            return self._result(reply.public, user=reply)
        if self.judge is not None:
            messages = judge_guess_messages(self._description, action.content)
            correct, feedback = await self.judge.ask(messages, lambda data: guess_verdict(data, self.verdicts))
            return self._result(feedback, 1.0 if correct else 0.0, done=correct, grader="judge")
        if guess_is_correct(action.content, self._title, self._category):
            return self._result(f"Correct! I was thinking of {self._title}.", 1.0, done=True)
        return self._result("No, that is not what I am thinking of. Ask more questions or guess again.")


JUDGE_SYSTEM = (
    "You are the secret holder of a mind-reading game and judge the other player's final guess of the entity "
    'you are thinking of. Say "Yes" only when the guess names that entity exactly or by a clearly equivalent '
    'name; anything partial, close or different is "No" (no partial credit). Speak to the player as "you"; '
    "keep the feedback short and never reveal the entity.\n"
    'Reply with a JSON object: {"thought": "<your reasoning>", "judgment": "Yes" | "No", '
    '"feedback": "<one or two sentences for the player>"}'
)


def judge_guess_messages(target_entity: str, guess: str) -> list[dict[str, str]]:
    """What UserRL's guess judge sees: the hidden entity description and the guess, nothing else."""
    return chat(JUDGE_SYSTEM, f"Entity you are thinking of:\n{target_entity}\n\nThe player's guess:\n{guess.strip()}")


def guess_verdict(data: Mapping[str, Any], reading: VerdictReading = "userrl") -> tuple[bool, str]:
    """(correct, feedback) of a guess judgement; UserRL reads ``judgment`` and ``feedback`` (A86)."""
    correct = verdict_label(data, "judgment", ("Yes", "No"), reading=reading, required=("feedback",)) == "Yes"
    feedback = str(data.get("feedback") or "").strip()
    return correct, feedback or ("Correct!" if correct else "That is not it. Ask more questions or guess again.")


def scripted_reply(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    """The scripted user's answer to the last utterance, with reasoning naming the entity."""
    title, description = str(persona_field(persona, "entity")), str(persona_field(persona, "description"))
    question = utterances[-1]
    verdict, asked, matched = yes_no_for(question, title, description)
    known = f"I am thinking of {title}: {description}."
    if not verdict:
        return UserReply(
            NOT_A_QUESTION, f"{known} The message asks nothing I can check, so I ask for a yes-or-no question."
        )
    reasoning = (
        f"{known} The question is about {named(asked, question)}; what I am thinking of matches "
        f"{named(matched, question) if matched else 'none of that'}, so the answer is {verdict}."
    )
    return UserReply(VERDICT_TEXT[verdict], reasoning)


_ENTITY_QUESTIONS = (
    "Is it associated with {w}?",
    "Does it have anything to do with {w}?",
    "Is {w} part of a description of it?",
)


class TelepathyExpert(CardExpert):
    """Twenty questions against a list of known entities (title, hidden description, opening line)."""

    def __init__(self, cards: Sequence[tuple[str, str, str]], *, confirmations: int = 2) -> None:
        super().__init__(
            [make_card(t, f"{t} {d}", cue, not_keywords=content_words(t)) for t, d, cue in cards], confirmations
        )

    @classmethod
    def from_tasks(cls, tasks: Iterable[GymTask], **kwargs) -> TelepathyExpert:
        cards = [
            (str(t.hidden["title"]), str(t.hidden.get("ground_truth", "")), t.opening_text.split("\n")[0].strip())
            for t in tasks
            if t.env_name == "TelepathyGym"
        ]
        return cls(cards, **kwargs)

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        opening = opening_text(prompt)
        asked: set[str] = set(content_words(opening))
        cards, questions = self._narrow(
            [c for c in self.cards if c.cue and c.cue in opening] or list(self.cards),
            history,
            asked,
            lambda q, c: yes_no_for(q, c.title, c.text)[0],
            lambda guess, c: guess_is_correct(guess, c.title),
        )
        template = _ENTITY_QUESTIONS[questions % len(_ENTITY_QUESTIONS)]
        if not cards:
            return ExpertMove(Action("answer", "I give up"), "None of the things I know fits these answers.")
        split = self._split_keyword(cards, asked) if len(cards) > 1 else None
        if split is not None:
            return ExpertMove(
                Action("action", template.format(w=split[1])),
                f"{len(cards)} possibilities remain; asking about {split[1]} splits them roughly in half.",
            )
        card = cards[0]
        confirm = self._distinctive(card, asked, 1)
        if questions < self.confirmations and confirm:
            return ExpertMove(
                Action("action", template.format(w=confirm[0])),
                f"I have a strong guess; asking about {confirm[0]} will confirm it.",
            )
        return ExpertMove(Action("answer", card.title), f"Every answer so far fits {card.title}.")


SPEC = GymSpec(
    gym=TelepathyGym,
    user_rule=scripted_reply,
    expert=lambda task, same_gym: TelepathyExpert.from_tasks(same_gym),
    userrl=UserRLPackage("telepathygym", "TelepathyEnv", task_field="title"),
)
