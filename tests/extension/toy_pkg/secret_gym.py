"""A researcher's own gym, outside mimesis_pl: the user holds a secret word; asking reveals it; naming it wins.

Everything mimesis-pl needs is the ``SPEC`` below; a config points at it with
``episode: {gyms: [secret_gym:SPEC]}`` (this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mimesis_pl.envs import Action, Gym, GymTask, StepResult
from mimesis_pl.envs.spec import GymSpec
from mimesis_pl.envs.user_protocol import UserReply

#: Episodes started, by this process (a test reads it to see the gym was the one played).
RESETS: list[str] = []

SYSTEM = (
    "You talk with a user who holds a secret word. Call the tool `interact_with_env` with `choice` `action` to "
    "ask the user something, or `answer` with the word itself."
)


def scripted_reply(persona: Mapping[str, Any], utterances: Sequence[str]) -> UserReply:
    """The scripted user's rule: tell the word when asked about it; private reasoning names it always."""
    word = str(persona["word"])
    asked = "word" in utterances[-1].lower() or "secret" in utterances[-1].lower()
    public = f"The word is {word}." if asked else "Ask me about my secret word."
    return UserReply(public, f"My secret word is {word}; the agent {'asked' if asked else 'did not ask'} for it.")


class SecretGym(Gym):
    env_name = "SecretGym"
    data_sources = ("interact_secret",)
    choices = ("action", "answer")

    def __init__(self, *, user=None, win_reward: float = 1.0) -> None:
        super().__init__(user=user)
        self.win_reward = win_reward

    async def _reset(self, task: GymTask) -> None:
        self._word = str(task.hidden["word"])
        RESETS.append(task.key)

    def _persona_prompt(self) -> str:
        return f"<persona>{json.dumps({'gym': self.env_name, 'word': self._word})}</persona>"

    async def _step(self, action: Action) -> StepResult:
        if action.choice == "answer":
            won = self._word.lower() in action.content.lower()
            return self._result("Thanks.", self.win_reward if won else 0.0, done=True)
        reply = await self._ask_user(action.content)
        return self._result(reply.public, 0.0, user=reply)


SPEC = GymSpec(gym=SecretGym, user_rule=scripted_reply)


def rows(words: Sequence[str]) -> list[dict[str, Any]]:
    """Task rows in UserRL's parquet row format, one per word."""
    out = []
    for i, word in enumerate(words):
        task = {"env_name": "SecretGym", "id": f"secret-{i}", "word": word}
        tools = {"create_kwargs": task}
        out.append(
            {
                "data_source": "interact_secret",
                "prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Guess my word."}],
                "ability": "interaction",
                "reward_model": {"style": "rule", **task},
                "extra_info": {"index": i, "split": "train", "tools_kwargs": {"interact_with_env": tools}},
            }
        )
    return out
