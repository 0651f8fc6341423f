"""What a gym declares about itself, next to its class: one :class:`GymSpec` (``SPEC`` in the gym's module).

A spec names the environment class and the parts other commands build for that gym: the scripted user's
rule (:class:`mimesis_pl.users.ScriptedUser`), the scripted expert (``mimesis-pl data record-experts``), the
compact system prompt (``mimesis-pl data prepare-gyms --compact-prompts``) and the installed UserRL package
that can run it instead (:mod:`mimesis_pl.envs.userrl_adapter`). The built-in specs are listed once, in
:mod:`mimesis_pl.envs.catalog`; every one of those consumers looks a gym up there, so adding a gym is its
module plus one catalog entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_pl.envs.base import Gym
from mimesis_pl.envs.expert import Expert
from mimesis_pl.envs.gyms.rules import Rule
from mimesis_pl.envs.tasks import GymTask

# (the task to play, the tasks of the same gym the expert may know) -> the expert for that task
ExpertFactory = Callable[[GymTask, Sequence[GymTask]], Expert]


@dataclass(frozen=True)
class UserRLPackage:
    """The UserRL package that plays a gym through the adapter.

    ``module``/``env_class``: what to import (``travelgym``/``TravelEnv``); ``task_field``: the hidden row
    field naming the task, given to UserRL as ``data_source`` in ``data_mode="single"``; ``scoped_base_url``:
    whether the config's ``base_url`` is bound to the episode through the shim (docs/decisions.md A47: not
    for TauGym, whose config writes the URL into the process environment, nor FunctionGym, which has no LLM).
    ``eval_config``: the fields UserRL's ``eval/eval.py`` sets for this gym beyond ``max_steps``/``data_mode``/
    ``data_source`` (Travel's rewards, Turtle's threshold, Search's judge); ``task_config``: the fields eval.py
    derives from the task key (Tau's category and split from ``"airline-007"``).
    """

    module: str
    env_class: str
    task_field: str = "id"
    scoped_base_url: bool = True
    eval_config: tuple[tuple[str, Any], ...] = ()
    task_config: Callable[[str], Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class GymSpec:
    """One gym and its parts; a part a gym does not have is ``None``.

    ``user_rule``: the scripted user's rule for the gym's personas (gyms with ``needs_user``);
    ``expert``: builds the scripted expert for a task; ``compact_prompt``: the short system prompt
    ``prepare-gyms --compact-prompts`` writes into its rows; ``userrl``: the UserRL package for the adapter.
    """

    gym: type[Gym]
    user_rule: Rule | None = None
    expert: ExpertFactory | None = None
    compact_prompt: str | None = None
    userrl: UserRLPackage | None = None

    @property
    def name(self) -> str:
        return self.gym.env_name
