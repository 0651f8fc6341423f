"""A researcher's own user simulator, outside mimesis_pl: an in-process user with a fixed reply rule.

Everything mimesis-pl needs is the settings class below; a config points at it with
``users: {class_path: my_user.MyUserSettings, init_args: {word: ...}}`` (this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from mimesis_pl.envs.user_protocol import UserReply
from mimesis_pl.rollout.services import BuiltUsers, UserSimSettings

#: Episodes handed a user, and the replies given, by this process (a test reads them to see who answered).
EPISODES: list[str] = []
REPLIES: list[str] = []


class EchoUser:
    """One episode's user: answers every utterance with ``word`` and how many words it heard."""

    def __init__(self, word: str) -> None:
        self.word = word

    async def reply(self, messages: Sequence[Mapping[str, str]], *, episode_id: str) -> UserReply:
        heard = len(str(messages[-1]["content"]).split())
        public = f"{self.word}: I heard {heard} words."
        REPLIES.append(public)
        return UserReply(public, reasoning=f"{episode_id}: I answer everything with {self.word!r}.")

    async def aclose(self) -> None:
        pass


class EchoUsers:
    """The user provider: one :class:`EchoUser` per episode (no shim, so ``base_url`` is ``None``)."""

    def __init__(self, word: str) -> None:
        self.word = word

    def for_episode(self, episode_id: str, base_url: str | None) -> EchoUser:
        EPISODES.append(episode_id)
        return EchoUser(self.word)


@dataclass
class MyUserSettings(UserSimSettings):
    """An in-process user that answers everything with ``word`` (no server, no shim).

    Args:
        word: what every reply starts with.
        model: the simulator's name in evaluation cache keys.
    """

    word: str = "Pineapple"
    model: str = "echo-user"

    kind: ClassVar[str] = "echo"

    def build(self) -> BuiltUsers:
        return BuiltUsers(EchoUsers(self.word), description=f"the in-process echo user ({self.word})")
