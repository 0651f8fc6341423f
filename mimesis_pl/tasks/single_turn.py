"""``SingleTurnTask``: one prompt, one thinking turn, an ``<answer>`` scored by a pure function.

Used by the theory-of-mind and persona/prediction families. Thinking is always on
(the reference forces it for every family but BehaviorChain; we apply one policy, docs/decisions.md S8) and the
answer is extracted from the cleaned reply as the reference cleans it (:func:`clean_response`): the strictly
split public part, never the reasoning; a reply with no think tag at all is read whole (scored in evaluation,
zeroed in training by the format gate); a malformed tagged reply scores 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .answers import extract_answer
from .base import Rollout, TaskContext, TaskResult, extra_info, only_turn, row_name
from .conversation import PolicyConversation
from .think_format import check_think_format, clean_response, gated_reward


@dataclass(frozen=True)
class Scored:
    """A task score in [0, 1] and flat float sub-metrics (logged as ``<prefix>/<key>``)."""

    reward: float
    metrics: dict[str, float] = field(default_factory=dict)


PromptFn = Callable[[Mapping[str, Any], Mapping[str, Any]], list[dict[str, str]]]
ScoreFn = Callable[[str | None, Mapping[str, Any], Mapping[str, Any]], Scored]
ReadFn = Callable[[str | None], str | None]


class SingleTurnTask:
    """``prompt(info, row)`` → messages; ``score(answer, info, row)`` → :class:`Scored`, where ``answer`` is
    ``read(cleaned reply)``: the first ``<answer>`` body by default, the first that matches the family's own
    pattern for the letter families (:func:`~.answers.answer_reader`, docs/decisions.md S84).

    ``prefix`` names the metrics (``fantom/reward``); several data sources may share one prefix.
    """

    def __init__(
        self,
        data_source: str,
        prompt: PromptFn,
        score: ScoreFn,
        prefix: str | None = None,
        read: ReadFn = extract_answer,
    ) -> None:
        self.data_source = data_source
        self.prompt = prompt
        self.score = score
        self.prefix = prefix or data_source
        self.read = read

    def parse(self, row: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, str]]]:
        """``(extra_info, prompt messages)`` of a row; a :class:`RowError` naming file, row and field otherwise.

        Everything the score reads (the gold, its options) is checked here too, before any generation.
        """
        info = extra_info(row)
        messages = self.prompt(info, row)
        self.score(None, info, row)
        return info, messages

    def parse_row(self, row: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, str]]]:
        """The set-up check of :func:`mimesis_pl.tasks.base.parse_row`: the same reading as :meth:`parse`."""
        return self.parse(row)

    async def run(self, row: Mapping[str, Any], ctx: TaskContext, *, group_id: str, gen_uid: str) -> TaskResult:
        info, messages = self.parse(row)
        conv = PolicyConversation(ctx.policy, messages, enable_think=True, sample=f"{row_name(row)} {gen_uid}")
        turn = await only_turn(conv, row, "to answer")
        scored = self.score(self.read(clean_response(turn.text, True)), info, row)
        fmt = check_think_format(conv.turns, True, ctx.policy.count_tokens, ctx.min_think_tokens)
        reward = gated_reward(scored.reward, fmt, is_train=ctx.is_train)
        metrics = {
            f"{self.prefix}/reward": scored.reward,
            **{f"{self.prefix}/{k}": float(v) for k, v in scored.metrics.items()},
            "all/score": scored.reward,
            "all/format_correct": float(fmt.correct),
            "all/think_tokens": fmt.think_tokens,
        }
        status = "truncated" if turn.truncated else "ok"
        run = Rollout(row, ctx, self.data_source, self.prefix, group_id, gen_uid)
        return run.result(
            [conv], status=status, reward=reward, score=scored.reward, metrics=metrics, transcript=conv.messages
        )


def chat(system: str, user: str) -> list[dict[str, str]]:
    """A system message (``""`` where the reference sends an empty one) and one user message."""
    return [{"role": "system", "content": system}, {"role": "user", "content": user.strip()}]
