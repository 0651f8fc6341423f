"""Rollout test helpers: a scripted engine that emits chosen texts, and UserRL-shaped rows."""

from __future__ import annotations

from typing import Any

from mimesis_pl.envs import Action
from mimesis_pl.envs.tool import action_to_tool_call
from mimesis_pl.rollout.engines import GenerationResult, SamplingParams

KIWI = "Kiwi - a small, brown, fuzzy fruit with bright green flesh."


def telepathy_row(
    title: str = "Kiwi", description: str = KIWI, opening: str = "I am thinking of a fruit."
) -> dict[str, Any]:
    return {
        "data_source": "interact_telepathygym",
        "prompt": [{"role": "system", "content": "Guess the entity."}, {"role": "user", "content": opening}],
        "ability": "interaction",
        "reward_model": {"style": "rule", "env_name": "TelepathyGym", "title": title, "ground_truth": description},
        "extra_info": {
            "index": 0,
            "split": "train",
            "need_tools_kwargs": True,
            "tools_kwargs": {"interact_with_env": {"create_kwargs": {"env_name": "TelepathyGym", "title": title}}},
        },
    }


def say(choice: str, content: str, thought: str = "hm") -> str:
    return f"<think>{thought}</think>\n" + action_to_tool_call(Action(choice, content))


class ScriptedEngine:
    """Emits the token ids of chosen texts (plus the stop id), one text per call, in call order.

    Calls listed in ``cut`` run out of tokens mid-turn; ``max_new_tokens`` is honoured like a real engine.
    """

    def __init__(self, tokenizer, texts: list[str], logprob: float = -0.5, cut: set[int] | None = None) -> None:
        self.tokenizer = tokenizer
        self.texts = list(texts)
        self.logprob = logprob
        self.cut = cut or set()
        self.calls: list[list[int]] = []

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> GenerationResult:
        k = len(self.calls)
        self.calls.append(list(prompt_ids))
        ids = self.tokenizer(self.texts[k % len(self.texts)], add_special_tokens=False)["input_ids"]
        if k in self.cut:  # generation runs out of tokens mid-turn
            ids = ids[: max(1, len(ids) // 2)]
            return GenerationResult(ids, [self.logprob] * len(ids), "length")
        ids = ids + [params.stop_token_ids[0]]
        if len(ids) > params.max_new_tokens:
            ids = ids[: params.max_new_tokens]
            return GenerationResult(ids, [self.logprob] * len(ids), "length")
        return GenerationResult(ids, [self.logprob] * len(ids), "stop")

    def update_weights(self, source) -> None:
        pass

    def sleep(self) -> None:
        pass

    def wake_up(self) -> None:
        pass

    def close(self) -> None:
        pass
