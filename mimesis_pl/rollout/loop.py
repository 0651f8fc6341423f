"""The multi-turn rollout loop: token-in/token-out episodes against gyms, many at once.

Per episode: render the prompt (with the tool schema) to ids; then, per turn, generate from the ids,
append the sampled ids exactly as they came (mask 1), hand the decoded text to the environment, and
append the *rendered delta* of the tool message it answers with (mask 0). Generated text is decoded
only to talk to the environment; it is never re-tokenised for training.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..chat import ChatRenderer
from ..envs import EnvironmentManager, GymTask, interact_tool_schema
from ..envs.base import Termination
from ..spans import TurnSpan
from .engines import RolloutEngine, SamplingParams
from .trajectory import Trajectory


@dataclass
class RolloutTimings:
    """Wall-clock seconds spent per phase in one batch (summed over concurrent episodes where noted)."""

    rollout: float = 0.0  # the whole batch
    generate: float = 0.0  # summed over episodes
    environment: float = 0.0  # summed over episodes: gym steps incl. the user simulator


class MultiTurnRollout:
    """Runs episodes of a policy (through an engine) against an :class:`EnvironmentManager`.

    Args:
        engine: token-in/token-out generator.
        tokenizer: the policy's tokenizer (decodes sampled ids for the environment).
        manager: builds one gym (and user) per episode.
        sampling: per-turn sampling; ``max_new_tokens`` caps each turn.
        max_length: cap on a trajectory's total ids (prompt + all turns); an episode that would
            pass it ends with status ``truncated``.
        template_kwargs: chat-template variables (e.g. ``enable_thinking``).
        max_concurrency: episodes in flight at once (engines batch their generate calls).
    """

    def __init__(
        self,
        engine: RolloutEngine,
        tokenizer: Any,
        manager: EnvironmentManager,
        sampling: SamplingParams,
        max_length: int = 9344,
        template_kwargs: Mapping[str, Any] | None = None,
        max_concurrency: int = 128,
    ) -> None:
        self.engine = engine
        self.tokenizer = tokenizer
        self.manager = manager
        self.sampling = sampling
        self.max_length = max_length
        self.template_kwargs = dict(template_kwargs or {})
        self.max_concurrency = max_concurrency
        self._renderers: dict[tuple[str, ...], ChatRenderer] = {}
        eot = tokenizer.eos_token_id
        if not sampling.stop_token_ids and eot is not None:
            self.sampling = replace(sampling, stop_token_ids=(eot,))

    def renderer_for(self, choices: Sequence[str]) -> ChatRenderer:
        key = tuple(choices)
        if key not in self._renderers:
            tools = [interact_tool_schema(key)]
            self._renderers[key] = ChatRenderer(self.tokenizer, tools=tools, **self.template_kwargs)
        return self._renderers[key]

    async def run_batch(
        self, rows: Sequence[Mapping[str, Any] | GymTask], n_samples: int, group_ids: Sequence[str] | None = None
    ) -> tuple[list[Trajectory], RolloutTimings]:
        """``n_samples`` episodes per row, all concurrently; trajectories in (row, sample) order."""
        timings = RolloutTimings()
        limit = asyncio.Semaphore(self.max_concurrency)
        group_ids = list(group_ids) if group_ids is not None else [uuid.uuid4().hex[:12] for _ in rows]

        async def one(row, group_id: str, k: int) -> Trajectory:
            async with limit:
                return await self.run_episode(row, group_id=group_id, gen_uid=f"{group_id}-{k}", timings=timings)

        start = time.perf_counter()
        jobs = [one(row, gid, k) for row, gid in zip(rows, group_ids) for k in range(n_samples)]
        trajectories = list(await asyncio.gather(*jobs))
        timings.rollout = time.perf_counter() - start
        return trajectories, timings

    async def run_episode(
        self, row: Mapping[str, Any] | GymTask, group_id: str, gen_uid: str, timings: RolloutTimings | None = None
    ) -> Trajectory:
        timings = timings if timings is not None else RolloutTimings()
        episode_id = f"{gen_uid}-{uuid.uuid4().hex[:8]}"
        task = row if isinstance(row, GymTask) else GymTask.from_row(row, source=f"episode {episode_id}")
        episode = await self.manager.start(task, episode_id)
        renderer = self.renderer_for(episode.gym.choices)
        messages: list[dict[str, Any]] = task.public_messages()
        ids = renderer.prompt_ids(messages, sample=episode_id)
        prompt_length = len(ids)
        mask = [0] * len(ids)
        logprobs: list[float] | None = [0.0] * len(ids)
        header = renderer.header_ids("assistant")
        spans: list[TurnSpan] = []
        rewards: list[float] = []
        finish_reasons: list[str] = []
        status: str | None = None
        try:
            while not episode.done:
                budget = self.max_length - len(ids)
                if budget < 1:
                    status = "truncated"
                    break
                if ids[len(ids) - len(header) :] != header:
                    raise RuntimeError(f"episode {episode_id}: the sequence does not end with the assistant header")
                params = replace(self.sampling, max_new_tokens=min(self.sampling.max_new_tokens, budget))
                t0 = time.perf_counter()
                result = await self.engine.generate(ids, params)
                timings.generate += time.perf_counter() - t0
                start = len(ids)
                ids.extend(result.token_ids)
                mask.extend([1] * len(result.token_ids))
                if logprobs is not None and result.logprobs is not None:
                    logprobs.extend(result.logprobs)
                else:
                    logprobs = None
                spans.append(TurnSpan(header_start=start - len(header), start=start, end=len(ids)))
                finish_reasons.append(result.finish_reason)
                text = self._text(result.token_ids, result.finish_reason)
                messages.append({"role": "assistant", "content": text})
                if result.finish_reason == "length":
                    # A cut turn is not a finished action: nothing is sent to the environment.
                    rewards.append(0.0)
                    status = "truncated"
                    break
                t0 = time.perf_counter()
                turn = await episode.step(text)
                timings.environment += time.perf_counter() - t0
                rewards.append(turn.reward)
                if turn.done:
                    break
                new = [{"role": "tool", "content": turn.observation}]
                tail = renderer.continuation_ids(messages, new, sample=episode_id)
                if len(ids) + len(tail) >= self.max_length:
                    status = "truncated"
                    break
                ids.extend(tail)
                mask.extend([0] * len(tail))
                if logprobs is not None:
                    logprobs.extend([0.0] * len(tail))
                messages.extend(new)
        finally:
            summary = await episode.finish(Termination.ABORTED if status is not None else None)
        return Trajectory(
            input_ids=ids,
            response_mask=mask,
            prompt_length=prompt_length,
            turn_spans=spans,
            turn_rewards=rewards,
            group_id=group_id,
            gen_uid=gen_uid,
            episode_id=episode_id,
            status=status or summary.status.value,
            rollout_logprobs=logprobs,
            messages=messages,
            privileged=list(episode.privileged),
            finish_reasons=finish_reasons,
            data_source=task.data_source,
            task_key=task.key,
            counters=dict(summary.counters),
        )

    def _text(self, token_ids: list[int], finish_reason: str) -> str:
        body = token_ids[:-1] if finish_reason == "stop" and token_ids else token_ids
        return self.tokenizer.decode(body, skip_special_tokens=False)
