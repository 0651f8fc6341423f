"""SearchGym: Bamboogle multi-hop questions answered with the help of a search backend.

The agent sees a question (``prompt``); the gold answer is the row's ``reward_model.ground_truth`` (or
``questions_path``, UserRL's ``questions.json``, by ``id``). Actions: ``search`` (a query to the
backend, :mod:`.backends`; at most ``max_search_steps`` per episode, ``max_search_results`` hits each)
and ``answer``.

Grading, as UserRL's: an answer is correct when it equals the gold answer after normalisation
(lower-case letters and digits only). Otherwise, with ``judge=`` (a served endpoint; UserRL's
evaluation uses its LLM judge) the judge sees the question, the answer and the gold answer and says
Yes/No; without a judge (the offline default) the exact match alone decides (UserRL's
``eval_method="rule"``). Reward 1.0 for a correct answer (the episode ends), 0 otherwise; wrong answers
may be retried. Episode score = 0 or 1. No user simulator.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimesis_pl.envs.base import Action, Gym, StepResult, TaskDataError, require
from mimesis_pl.envs.gyms.judging import VerdictReading, chat, check_reading, make_judge, verdict_label
from mimesis_pl.envs.gyms.search.backends import SearchHit, SearchSettings, search_settings
from mimesis_pl.envs.tasks import GymTask

if TYPE_CHECKING:
    from mimesis_pl.llm import ChatModelSettings


def normalize_answer(text: str) -> str:
    """UserRL's answer normalisation: every character ``str.isalnum`` keeps (any script: "Zürich" keeps its
    "ü"), lower-cased."""
    return "".join(c.lower() for c in text if c.isalnum())


def answers_match(answer: str, gold: str) -> bool:
    norm = normalize_answer(answer)
    return bool(norm) and norm == normalize_answer(gold)


def format_hits(query: str, hits: list[SearchHit]) -> str:
    """The observation of one search: numbered results (title, text)."""
    if not hits:
        return f"No results found for: {query}"
    lines = [f"Search results for: {query}"]
    for i, hit in enumerate(hits, 1):
        head = f"{i}. {hit.title}: " if hit.title else f"{i}. "
        lines.append(head + hit.snippet)
    return "\n".join(lines)


@lru_cache(maxsize=4)
def load_questions(path: str) -> dict[str, tuple[str, str]]:
    """UserRL's ``questions.json`` as id → (question, answer)."""
    try:
        records = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise TaskDataError(f"cannot read questions {path}: {err}") from None
    table = {}
    for i, r in enumerate(records):
        where = f"{path}: record {i}"
        table[str(require(r, "id", where=where))] = (
            str(require(r, "question", where=where)),
            str(require(r, "answer", where=where)),
        )
    return table


JUDGE_SYSTEM = (
    'You check a short answer to a question against the gold answer. Say "Yes" when the answer means the '
    'same as the gold answer (different wording or format of the same fact is fine), else "No".\n'
    'Reply with a JSON object: {"reasoning": "<your reasoning>", "judgment": "Yes" | "No", '
    '"feedback": "<one sentence for the player, not revealing the answer>"}'
)


def answer_verdict(data: Mapping[str, Any], reading: VerdictReading = "userrl") -> bool:
    """Whether the judge accepts the answer; UserRL reads ``reasoning``, ``judgment`` and ``feedback`` (A86)."""
    required = ("reasoning", "feedback")
    return verdict_label(data, "judgment", ("Yes", "No"), reading=reading, required=required) == "Yes"


def judge_answer_messages(question: str, answer: str, gold: str) -> list[dict[str, str]]:
    """What UserRL's answer judge sees: the question, the model's answer and the gold answer."""
    return chat(JUDGE_SYSTEM, f"Question:\n{question}\n\nAnswer given:\n{answer.strip()}\n\nGold answer:\n{gold}")


class SearchGym(Gym):
    """Answer a multi-hop question, searching a corpus or a search API along the way."""

    env_name = "SearchGym"
    data_sources = ("interact_searchgym",)
    choices = ("search", "answer")
    needs_user = False

    def __init__(
        self,
        *,
        user: Any = None,
        search: SearchSettings | Mapping[str, Any] | None = None,
        max_search_results: int = 5,
        max_search_steps: int = 5,
        questions_path: str | Path | None = None,
        judge: ChatModelSettings | Mapping[str, Any] | None = None,
        verdicts: VerdictReading = "userrl",
    ) -> None:
        super().__init__(user=user)
        if max_search_results < 1 or max_search_steps < 0:
            raise ValueError("SearchGym: max_search_results must be >= 1 and max_search_steps >= 0")
        settings = search_settings(search)
        if settings is None:
            raise ValueError(
                "SearchGym needs the option search: {class_path: BM25SearchSettings, init_args: {corpus_path: "
                "CORPUS.jsonl}} or {class_path: HttpSearchSettings, init_args: {url: URL}}"
            )
        self.backend = settings.build()
        self.max_search_results = max_search_results
        self.max_search_steps = max_search_steps
        self.questions_path = Path(questions_path) if questions_path else None
        self.judge = make_judge(judge, gym=self.env_name)
        self.verdicts = check_reading(verdicts, where=self.env_name)

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """Set-up check (E28): ``search:`` names a backend class (never the old ``kind:``)."""
        search_settings(options.get("search"))

    async def aclose(self) -> None:
        await self.backend.aclose()
        if self.judge is not None:
            await self.judge.aclose()

    async def _reset(self, task: GymTask) -> None:
        known = None
        if self.questions_path is not None:
            known = load_questions(str(self.questions_path)).get(str(task.hidden.get("id", "")))
        gold = task.hidden.get("ground_truth") or (known[1] if known else None)
        if not gold:
            raise TaskDataError(
                f"{task.source}: no gold answer (reward_model.ground_truth is empty"
                + (" and the id is not in questions_path)" if self.questions_path else " and no questions_path given)")
            )
        self._gold = str(gold)
        self._question = known[0] if known else task.opening_text.strip().split("\n")[0]
        self._searches = 0

    async def _step(self, action: Action) -> StepResult:
        if action.choice == "search":
            return await self._search(action.content.strip())
        if answers_match(action.content, self._gold):
            return self._result("Your answer is correct!", 1.0, done=True, grader="exact")
        if self.judge is not None:
            messages = judge_answer_messages(self._question, action.content, self._gold)
            if await self.judge.ask(messages, lambda data: answer_verdict(data, self.verdicts)):
                return self._result("Your answer is correct!", 1.0, done=True, grader="judge")
        return self._result("Your answer is not correct. You can search for more information or answer again.")

    async def _search(self, query: str) -> StepResult:
        if self._searches >= self.max_search_steps:
            return self._result(f"You have used all {self.max_search_steps} searches. Please give your answer now.")
        if not query:
            return self._result("Your search query is empty. Please write what to search for.")
        self._searches += 1
        hits = await self.backend.search(query, self.max_search_results)
        return self._result(format_hits(query, hits), searches=self._searches)
