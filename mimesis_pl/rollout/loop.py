"""The multi-turn rollout loop: token-in/token-out episodes against gyms, many at once.

Per episode: render the prompt (with the tool schema) to ids; then, per turn, generate from the ids,
append the sampled ids exactly as they came (mask 1), hand the decoded text to the environment, and
append the *rendered delta* of the tool message it answers with (mask 0). Generated text is decoded
only to talk to the environment; it is never re-tokenised for training.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from ..chat import ChatRenderer
from ..envs import EnvironmentManager, EpisodeSummary, GymTask, PrivilegedTurn, interact_tool_schema
from ..envs.base import Termination
from ..spans import TurnSpan
from .engines import RolloutEngine, SamplingParams
from .engines.base import with_drawn_seed
from .trajectory import Trajectory

_SEED_SPACE = 2**62


def turn_seed(episode_seed: int, turn: int) -> int:
    """The sampling seed of turn ``turn`` of an episode: a pure function of the episode's seed and the turn.

    Seeds drawn per call, in the order the episodes reached the engine, made a run's samples depend on how
    the users' replies happened to interleave, so two runs with one seed diverged after their first turn
    (decision A74 in docs/decisions.md).
    """
    return (episode_seed * 1_000_003 + turn * 7_919 + 1) % _SEED_SPACE


def draw_episode_seed(sampling: SamplingParams) -> int | None:
    """A fresh episode seed from torch's global RNG; ``None`` when the sampling settings fix the seed (A74)."""
    return None if sampling.seed is not None else with_drawn_seed(sampling).seed


def episode_seed(run_seed: int, group_id: str, sample: int) -> int:
    """The sampling seed of sample ``sample`` of group ``group_id``: a pure function of the three.

    A step's group ids name the step, the batch and the row (``s{step}-b{batch}-p{row}``, rows numbered over all
    ranks), so a run resumed from a checkpoint samples what the uninterrupted run sampled without any random
    state having to survive the stop (decision D20 in docs/decisions.md).
    """
    digest = hashlib.sha256(f"{run_seed}/{group_id}/{sample}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % _SEED_SPACE


def derive_episode_seed(sampling: SamplingParams, run_seed: int, group_id: str, sample: int) -> int | None:
    """:func:`episode_seed`, or ``None`` when the sampling settings fix the seed."""
    return None if sampling.seed is not None else episode_seed(run_seed, group_id, sample)


def run_seed_now() -> int:
    """The seed torch's global RNG was last seeded with (``seed_everything`` seeds it in every process)."""
    return torch.initial_seed()


def episode_suffix(seed: int | None) -> str:
    """What makes an episode id unique beyond its ``gen_uid``: from its seed, so gyms that seed their own
    randomness with the episode id (Travel) repeat too; random when the sampling settings fix the seed (D20)."""
    return f"{seed % 16**8:08x}" if seed is not None else uuid.uuid4().hex[:8]


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
        run_seed: what episode seeds are derived from with the group ids (D20); torch's initial seed when
            ``None`` (``seed_everything``'s seed in a CLI run).
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
        run_seed: int | None = None,
    ) -> None:
        self.engine = engine
        self.run_seed = run_seed_now() if run_seed is None else run_seed
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
        self,
        rows: Sequence[Mapping[str, Any] | GymTask],
        n_samples: int,
        group_ids: Sequence[str] | None = None,
        seeds: Sequence[int | None] | None = None,
    ) -> tuple[list[Trajectory], RolloutTimings]:
        """``n_samples`` episodes per row, all concurrently; trajectories in (row, sample) order.

        With ``group_ids`` each episode's seed is derived from the run seed, its group id and its sample number
        (D20); without, random group ids are made and the seeds are drawn from torch's RNG in (row, sample) order.
        ``seeds``: the episodes' seeds in (row, sample) order, given by the caller; derived or drawn here when
        not given.
        """
        timings = RolloutTimings()
        limit = asyncio.Semaphore(self.max_concurrency)
        derived = group_ids is not None
        group_ids = list(group_ids) if group_ids is not None else [uuid.uuid4().hex[:12] for _ in rows]

        async def one(row, group_id: str, k: int, seed: int | None) -> Trajectory:
            async with limit:
                return await self.run_episode(
                    row, group_id=group_id, gen_uid=f"{group_id}-{k}", timings=timings, seed=seed
                )

        start = time.perf_counter()
        # Each episode's seed is fixed here, in (row, sample) order, before any episode runs (A74, D20).
        slots = [(row, gid, k) for row, gid in zip(rows, group_ids) for k in range(n_samples)]
        if seeds is not None and len(seeds) != len(slots):
            raise ValueError(f"run_batch: {len(seeds)} seeds for {len(slots)} episodes")
        if seeds is None:
            seeds = [
                derive_episode_seed(self.sampling, self.run_seed, gid, k) if derived else self._episode_seed()
                for _, gid, k in slots
            ]
        jobs = [one(row, gid, k, seed) for (row, gid, k), seed in zip(slots, seeds)]
        trajectories = list(await asyncio.gather(*jobs))
        timings.rollout = time.perf_counter() - start
        return trajectories, timings

    def _episode_seed(self) -> int | None:
        return draw_episode_seed(self.sampling)

    async def run_episode(
        self,
        row: Mapping[str, Any] | GymTask,
        group_id: str,
        gen_uid: str,
        timings: RolloutTimings | None = None,
        seed: int | None = None,
    ) -> Trajectory:
        """One episode: start it, alternate generated turns and environment steps, finish it.

        Turn *t* samples with :func:`turn_seed` of ``seed`` (drawn now, before the first await, when not given;
        with a seed in the sampling settings every turn uses that one).
        """
        timings = timings if timings is not None else RolloutTimings()
        seed = seed if seed is not None else self._episode_seed()
        episode_id = f"{gen_uid}-{episode_suffix(seed)}"
        task = row if isinstance(row, GymTask) else GymTask.from_row(row, source=f"episode {episode_id}")
        episode = await self.manager.start(task, episode_id)
        renderer = self.renderer_for(episode.gym.choices)
        state = _EpisodeState.start(renderer, task.public_messages(), episode_id)
        try:
            while not episode.done:
                if self.max_length - len(state.ids) < 1:
                    state.status = "truncated"
                    break
                text, finish_reason = await self._generate_turn(state, renderer, timings, seed)
                if finish_reason == "length":
                    # A cut turn is not a finished action: nothing is sent to the environment.
                    state.rewards.append(0.0)
                    state.status = "truncated"
                    break
                t0 = time.perf_counter()
                turn = await episode.step(text)
                timings.environment += time.perf_counter() - t0
                state.rewards.append(turn.reward)
                if turn.done:
                    break
                if not self._append_observation(state, renderer, turn.observation):
                    state.status = "truncated"
                    break
        finally:
            summary = await episode.finish(Termination.ABORTED if state.status is not None else None)
        return state.trajectory(task, group_id, gen_uid, summary, list(episode.privileged))

    async def _generate_turn(
        self, state: _EpisodeState, renderer: ChatRenderer, timings: RolloutTimings, seed: int | None
    ) -> tuple[str, str]:
        """Sample one assistant turn onto the ids (mask 1, ids exactly as sampled); ``(text, finish_reason)``."""
        header = renderer.header_ids("assistant")
        if state.ids[len(state.ids) - len(header) :] != header:
            raise RuntimeError(f"episode {state.episode_id}: the sequence does not end with the assistant header")
        budget = self.max_length - len(state.ids)
        params = replace(self.sampling, max_new_tokens=min(self.sampling.max_new_tokens, budget))
        if seed is not None:
            params = replace(params, seed=turn_seed(seed, len(state.spans)))
        t0 = time.perf_counter()
        result = await self.engine.generate(state.ids, params)
        timings.generate += time.perf_counter() - t0
        start = len(state.ids)
        state.extend(result.token_ids, trained=True, logprobs=result.logprobs)
        state.spans.append(TurnSpan(header_start=start - len(header), start=start, end=len(state.ids)))
        state.finish_reasons.append(result.finish_reason)
        text = self._text(result.token_ids, result.finish_reason)
        state.messages.append({"role": "assistant", "content": text})
        return text, result.finish_reason

    def _append_observation(self, state: _EpisodeState, renderer: ChatRenderer, observation: str) -> bool:
        """Append the rendered delta of the tool message (mask 0); ``False`` when it would pass ``max_length``."""
        new = [{"role": "tool", "content": observation}]
        tail = renderer.continuation_ids(state.messages, new, sample=state.episode_id)
        if len(state.ids) + len(tail) >= self.max_length:
            return False
        state.extend(tail, trained=False, logprobs=[0.0] * len(tail))
        state.messages.extend(new)
        return True

    def _text(self, token_ids: list[int], finish_reason: str) -> str:
        body = token_ids[:-1] if finish_reason == "stop" and token_ids else token_ids
        return self.tokenizer.decode(body, skip_special_tokens=False)


@dataclass
class _EpisodeState:
    """What one episode has built so far: the ids and their masks, turn spans and rewards, messages."""

    episode_id: str
    ids: list[int]
    prompt_length: int
    mask: list[int]
    logprobs: list[float] | None  # None once a turn came without log-probs
    messages: list[dict[str, Any]]
    spans: list[TurnSpan] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    finish_reasons: list[str] = field(default_factory=list)
    status: str | None = None  # set when the loop ends the episode itself (truncation)

    @classmethod
    def start(cls, renderer: ChatRenderer, messages: list[dict[str, Any]], episode_id: str) -> _EpisodeState:
        ids = renderer.prompt_ids(messages, sample=episode_id)
        return cls(episode_id, ids, len(ids), [0] * len(ids), [0.0] * len(ids), messages)

    def extend(self, token_ids: Sequence[int], *, trained: bool, logprobs: Sequence[float] | None) -> None:
        self.ids.extend(token_ids)
        self.mask.extend([int(trained)] * len(token_ids))
        if self.logprobs is not None and logprobs is not None:
            self.logprobs.extend(logprobs)
        else:
            self.logprobs = None

    def trajectory(
        self, task: GymTask, group_id: str, gen_uid: str, summary: EpisodeSummary, privileged: list[PrivilegedTurn]
    ) -> Trajectory:
        return Trajectory(
            input_ids=self.ids,
            response_mask=self.mask,
            prompt_length=self.prompt_length,
            turn_spans=self.spans,
            turn_rewards=self.rewards,
            group_id=group_id,
            gen_uid=gen_uid,
            episode_id=self.episode_id,
            status=self.status or summary.status.value,
            rollout_logprobs=self.logprobs,
            messages=self.messages,
            privileged=privileged,
            finish_reasons=self.finish_reasons,
            data_source=task.data_source,
            task_key=task.key,
            counters=dict(summary.counters),
            error=summary.error,
        )
