"""``PolicyConversation``: the simulator being trained, talking token-in/token-out.

The same contract as the agent side's :class:`~mimesis_pl.rollout.MultiTurnRollout`: the prompt
is rendered once by the shared :class:`~mimesis_pl.chat.ChatRenderer`; each policy turn appends the
engine's sampled ids exactly as generated (mask 1, rollout log-probs kept); every other message
(partner, support agent, replayed seed turns) is appended as the renderer's delta (mask 0). A
turn the length cap cut gets the end-of-turn id appended with mask 0, so later messages render as
they would be served. Generated text is decoded only to talk to partners and judges.

Sampling seeds do not depend on timing (docs/decisions.md A74): the runner gives each rollout its own
``Policy.for_episode(seed)``, with the seed drawn up front in (row, sample) order, and turn *t* of the
rollout's *c*-th conversation samples with ``turn_seed(turn_seed(seed, c), t)`` (the agent loop's
:func:`~mimesis_pl.rollout.loop.turn_seed`). A seed fixed in the sampling settings is used for every turn.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..chat import ChatRenderer
from ..rollout.engines import RolloutEngine, SamplingParams
from ..rollout.loop import turn_seed
from ..rollout.trajectory import Trajectory
from ..spans import TurnSpan
from .think_format import GeneratedTurn


@dataclass
class Policy:
    """The trained simulator as tasks see it: an engine, its tokenizer and per-turn sampling.

    ``episode_seed`` is set on a rollout's own copy (:meth:`for_episode`); ``None`` leaves seeding to the
    sampling settings (a fixed ``sampling.seed``, or a seed the engine draws per call).
    """

    engine: RolloutEngine
    tokenizer: Any
    sampling: SamplingParams
    max_length: int = 24576
    episode_seed: int | None = None
    _renderers: dict[tuple, ChatRenderer] = field(default_factory=dict)  # shared by the per-rollout copies
    _conversations: int = 0  # conversations opened on this copy so far

    def for_episode(self, seed: int | None) -> Policy:
        """This policy for one rollout whose conversations sample from ``seed`` (A74)."""
        return replace(self, episode_seed=seed, _conversations=0)

    def conversation_seed(self) -> int | None:
        """The seed of the next conversation opened on this rollout: ``turn_seed(episode_seed, c)`` for the c-th."""
        if self.episode_seed is None:
            return None
        index, self._conversations = self._conversations, self._conversations + 1
        return turn_seed(self.episode_seed, index)

    def renderer(self, enable_think: bool | None) -> ChatRenderer:
        key = (enable_think,)
        if key not in self._renderers:
            kwargs = {} if enable_think is None else {"enable_thinking": enable_think}
            self._renderers[key] = ChatRenderer(self.tokenizer, **kwargs)
        return self._renderers[key]

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])


class BudgetExhausted(Exception):
    """The trajectory reached ``max_length``: the caller ends the dialogue (not an error)."""


class PolicyConversation:
    """One rollout's token sequence and chat; ``await step()`` samples the policy's next turn."""

    def __init__(
        self, policy: Policy, messages: Sequence[Mapping[str, Any]], enable_think: bool | None, sample: str
    ) -> None:
        self.policy = policy
        self.enable_think = enable_think
        self.renderer = policy.renderer(enable_think)
        self.sample = sample
        self.seed = policy.conversation_seed()  # turn t samples with turn_seed(self.seed, t)
        self.messages: list[dict[str, Any]] = [dict(m) for m in messages]
        self.ids = self.renderer.prompt_ids(self.messages, sample=sample)
        self.prompt_length = len(self.ids)
        self.mask = [0] * len(self.ids)
        self.logprobs: list[float] | None = [0.0] * len(self.ids)
        self.spans: list[TurnSpan] = []
        self.turns: list[GeneratedTurn] = []
        self.finish_reasons: list[str] = []
        self.generate_s = 0.0
        self._open = True  # the ids end with the assistant generation prompt

    async def step(self, max_new_tokens: int | None = None) -> GeneratedTurn:
        """Sample the next assistant turn; raises :class:`BudgetExhausted` when no room is left."""
        if not self._open:
            raise RuntimeError(f"{self.sample}: step() after a turn with no message appended since")
        budget = self.policy.max_length - len(self.ids)
        cap = min(self.policy.sampling.max_new_tokens, max_new_tokens or self.policy.sampling.max_new_tokens, budget)
        if cap < 1:
            raise BudgetExhausted(self.sample)
        t0 = time.perf_counter()
        params = replace(self.policy.sampling, max_new_tokens=cap)
        if self.seed is not None:
            params = replace(params, seed=turn_seed(self.seed, len(self.spans)))
        result = await self.policy.engine.generate(list(self.ids), params)
        self.generate_s += time.perf_counter() - t0
        header = len(self.renderer.header_ids("assistant"))
        start = len(self.ids)
        self.ids.extend(result.token_ids)
        self.mask.extend([1] * len(result.token_ids))
        if self.logprobs is not None and result.logprobs is not None:
            self.logprobs.extend(result.logprobs)
        else:
            self.logprobs = None
        self.spans.append(TurnSpan(header_start=start - header, start=start, end=len(self.ids)))
        self.finish_reasons.append(result.finish_reason)
        truncated = result.finish_reason == "length"
        body = result.token_ids[:-1] if not truncated and result.token_ids else result.token_ids
        text = self.policy.tokenizer.decode(body, skip_special_tokens=False)
        if truncated:  # close the turn so that later messages render exactly as served
            self._extend_context([self.renderer.eot_id])
        turn = GeneratedTurn(text=text, truncated=truncated)
        self.turns.append(turn)
        self.messages.append({"role": "assistant", "content": self._as_rendered(text)})
        self._open = False
        return turn

    def append(self, messages: Sequence[Mapping[str, Any]], generate_next: bool = True) -> None:
        """Append non-policy messages (mask 0); raises :class:`BudgetExhausted` if they do not fit."""
        new = [dict(m) for m in messages]
        tail = self.renderer.continuation_ids(
            self.messages, new, add_generation_prompt=generate_next, sample=self.sample
        )
        if len(self.ids) + len(tail) >= self.policy.max_length:
            raise BudgetExhausted(self.sample)
        self._extend_context(tail)
        self.messages.extend(new)
        self._open = generate_next

    def append_assistant(self, text: str) -> None:
        """A replayed assistant turn the policy did not generate (seeded context, mask 0)."""
        msg = {"role": "assistant", "content": text}
        delta = self.renderer.continuation_ids(self.messages, [msg], add_generation_prompt=False, sample=self.sample)
        # continuation_ids ends after the turn's separator; drop the header the open prompt already holds.
        header = self.renderer.header_ids("assistant")
        if self._open and delta[: len(header)] == header:
            delta = delta[len(header) :]
        # End at the end-of-turn id like a generated turn; the separator comes with the next message.
        if self.renderer.eot_id in delta:
            delta = delta[: len(delta) - delta[::-1].index(self.renderer.eot_id)]
        self._extend_context(delta)
        self.messages.append(msg)
        self._open = False

    def _as_rendered(self, text: str) -> str:
        # With a pre-filled opener the chat must carry the opener for the template to re-split it.
        if self.enable_think and "</think>" in text and "<think>" not in text:
            return "<think>" + text
        return text

    def _extend_context(self, ids: list[int]) -> None:
        self.ids.extend(ids)
        self.mask.extend([0] * len(ids))
        if self.logprobs is not None:
            self.logprobs.extend([0.0] * len(ids))

    def trajectory(
        self, *, group_id: str, gen_uid: str, status: str, reward: float, data_source: str, key: str
    ) -> Trajectory:
        """The rollout for training; context appended after the last generated turn is cut (it trains nothing)."""
        end = self.spans[-1].end if self.spans else len(self.ids)
        if self.spans and self.finish_reasons[-1] == "length":
            end += 1  # keep the end-of-turn id that closed a truncated turn
        return Trajectory(
            input_ids=self.ids[:end],
            response_mask=self.mask[:end],
            prompt_length=self.prompt_length,
            turn_spans=list(self.spans),
            turn_rewards=[reward] if self.spans else [],
            group_id=group_id,
            gen_uid=gen_uid,
            episode_id=f"{gen_uid}",
            status=status,
            rollout_logprobs=None if self.logprobs is None else self.logprobs[:end],
            reward=reward,
            messages=self.messages,
            finish_reasons=list(self.finish_reasons),
            data_source=data_source,
            task_key=key,
        )
