"""Optional adapter: run an installed UserRL gym package (``travelgym``, ``taugym``, …) as a mimesis gym.

Nothing in mimesis-pl depends on it; the packages are imported only when an adapted gym is built. A gym
runs through the adapter when its options in ``episode.gym_options`` hold ``userrl: {...}`` (UserRL
config fields; :mod:`mimesis_pl.envs.registry`). The adapter converts an :class:`Action` into UserRL's
action string (``"[action] …"``), takes the observation's ``feedback`` text, ends the episode on
``terminated or truncated`` and passes UserRL's rewards through unchanged (``reward_bounds = "none"``:
no episode-sum clip, so a correct Travel answer after two elicited preferences still earns its 1.0;
docs/decisions.md A40). Which package plays a gym, and which row field names its task, the gym declares
itself (``SPEC.userrl``, a :class:`~mimesis_pl.envs.spec.UserRLPackage`).

**Settings** (A81): each env starts from what UserRL's ``eval/eval.py`` sets, so adapter numbers are
UserRL's evaluation numbers: ``max_steps`` = the manager's turn budget, Travel's search/preference rewards
0.2/0.6, Turtle's success threshold 1.0, Search's LLM grading, Tau's domain and split from the task id
(``airline-007`` is airline test task 7). The ``userrl:`` fields are applied after them; the gym option
``userrl_defaults: package`` starts from the package's own defaults instead.

**Through the shim** (A47): when the manager has a shim, the gym's ``base_url`` is bound to the
episode, ``{shim}/ep/{episode_id}/v1``, as the reference's episode scoping does (not where the package
says ``scoped_base_url=False``: TauGym, whose config writes the URL into the process environment, and
FunctionGym, which has no LLM). After each
step the adapter reads the episode's new privileged entries from the shim and reports the last one as
the user's reply (``info["user"]``), so CSD gets evidence. UserRL's gyms send their judge calls
through the same URL; like the reference, the last entry of a step is taken as the user's.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

from mimesis_pl.envs.base import Action, Gym, StepResult
from mimesis_pl.envs.catalog import BUILTIN_SPECS, builtin_spec
from mimesis_pl.envs.spec import UserRLPackage
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.user_protocol import UserReply, UserSimulator
from mimesis_pl.shim.client import AsyncShimClient

log = logging.getLogger(__name__)

# The option key that selects the adapter for a gym name.
ADAPTER_OPTION = "userrl"

EnvFactory = Callable[[GymTask, Mapping[str, Any]], Any]
# Whose settings the adapted env starts from: UserRL's eval/eval.py (default) or the package's own defaults.
UserRLDefaults = Literal["eval", "package"]
# eval.sh's turn budget, eval.py's max_steps when the manager does not give one.
EVAL_MAX_TURNS = 16


def task_fields(
    package: UserRLPackage, task_key: Any, *, max_turns: int = EVAL_MAX_TURNS, defaults: UserRLDefaults = "eval"
) -> dict[str, Any]:
    """The config fields the adapter sets for one task before the user's ``userrl:`` fields (A81).

    Always ``data_mode="single"`` and ``data_source`` = the task key. With ``defaults="eval"`` also what
    UserRL's ``eval/eval.py`` sets: ``max_steps`` = the turn budget, the gym's fixed evaluation fields and
    those it derives from the key (Tau: ``airline-007`` plays airline task 7 of the test split).
    """
    fields: dict[str, Any] = {"data_mode": "single", "data_source": task_key}
    if defaults == "package":
        return fields
    if defaults != "eval":
        raise ValueError(f"userrl_defaults must be 'eval' or 'package', got {defaults!r}")
    fields["max_steps"] = max_turns
    fields.update(package.eval_config)
    if package.task_config is not None:
        fields.update(package.task_config(str(task_key)))
    return fields


def userrl_env_factory(
    env_name: str,
    config: Mapping[str, Any] | None = None,
    *,
    max_turns: int = EVAL_MAX_TURNS,
    defaults: UserRLDefaults = "eval",
) -> EnvFactory:
    """A factory building the installed UserRL env of built-in gym ``env_name`` for one task."""
    spec = builtin_spec(env_name)
    if spec is None or spec.userrl is None:
        known = sorted(s.name for s in BUILTIN_SPECS if s.userrl is not None)
        raise ValueError(f"no UserRL package known for {env_name!r}; known: {known}")
    return package_env_factory(env_name, spec.userrl, config, max_turns=max_turns, defaults=defaults)


def package_env_factory(
    env_name: str,
    package: UserRLPackage,
    config: Mapping[str, Any] | None = None,
    *,
    max_turns: int = EVAL_MAX_TURNS,
    defaults: UserRLDefaults = "eval",
) -> EnvFactory:
    """A factory building ``package``'s env for one task.

    The config starts from the package's defaults, then :func:`task_fields` (eval.py's settings unless
    ``defaults="package"``), then ``config`` (the user's ``userrl:`` fields), then the factory's per-episode
    overrides (the episode's ``base_url``).
    """

    def build(task: GymTask, overrides: Mapping[str, Any]) -> Any:
        try:
            module = importlib.import_module(package.module)
        except ImportError as err:
            raise ImportError(
                f"{env_name} adapter needs the UserRL package {package.module!r} installed: {err}"
            ) from None
        cfg = module.get_default_config()
        fields = task_fields(package, task.hidden.get(package.task_field), max_turns=max_turns, defaults=defaults)
        for name, value in {**fields, **(config or {}), **overrides}.items():
            setattr(cfg, name, value)
        return getattr(module, package.env_class)(cfg)

    return build


class UserRLGym(Gym):
    """Wraps any env with ``reset()`` and ``step_async(str)`` (or ``step(str)``) returning gymnasium tuples."""

    env_name = "UserRLGym"
    choices = ("action", "answer", "search")
    needs_user = False
    reward_bounds = "none"
    takes_shim_url: ClassVar[bool] = True
    takes_max_turns: ClassVar[bool] = True  # the manager passes its turn budget (eval.py's max_steps)
    # The package this class runs (set by :func:`userrl_gym_class`); without one, pass ``env_factory``.
    package: ClassVar[UserRLPackage | None] = None

    def __init__(
        self,
        *,
        user: UserSimulator | None = None,
        env_factory: EnvFactory | None = None,
        config: Mapping[str, Any] | None = None,
        shim_url: str | None = None,
        max_turns: int = EVAL_MAX_TURNS,
        userrl_defaults: UserRLDefaults = "eval",
        shim_token: str | None = None,
    ) -> None:
        super().__init__(user=user)
        if env_factory is None:
            package = self.package
            settings = {"max_turns": max_turns, "defaults": userrl_defaults}
            env_factory = (
                userrl_env_factory(self.env_name, config, **settings)
                if package is None
                else package_env_factory(self.env_name, package, config, **settings)
            )
        self._factory = env_factory
        self._env: Any = None
        scoped = shim_url is not None and (self.package is None or self.package.scoped_base_url)
        # with the shim's token, or every read is a 401 and CSD silently gets no evidence
        self._shim = AsyncShimClient(shim_url, token=shim_token) if scoped and shim_url else None
        self._shim_token = shim_token
        self._next_entry = 0

    async def _reset(self, task: GymTask) -> None:
        overrides = {"base_url": self._shim.episode_base_url(self.episode_id)} if self._shim else {}
        if self._shim and self._shim_token:  # the env's own LLM calls go through the shim too
            overrides["api_key"] = self._shim_token
        self._env = self._factory(task, overrides)
        self._env.reset()

    async def _step(self, action: Action) -> StepResult:
        text = f"[{action.choice}] {action.content}"
        if hasattr(self._env, "step_async"):
            observation, reward, terminated, truncated, info = await self._env.step_async(text)
        else:
            observation, reward, terminated, truncated, info = self._env.step(text)
        feedback = observation.get("feedback", "") if isinstance(observation, Mapping) else str(observation)
        done = bool(terminated or truncated)
        extra: dict[str, Any] = {"userrl_info": info}
        reply = await self._new_user_reply()
        if reply is not None:
            extra["user"] = reply
        return self._result(str(feedback), float(reward), done=done, **extra)

    async def _new_user_reply(self) -> UserReply | None:
        """The last privileged entry the shim stored for this episode during the step, if any."""
        if self._shim is None:
            return None
        try:
            entries = await self._shim.privileged(self.episode_id)
        except Exception as err:  # evidence is optional; the step itself succeeded
            log.warning("%s episode %s: privileged read failed: %r", self.env_name, self.episode_id, err)
            return None
        new = [e for e in entries if int(e.get("index", -1)) >= self._next_entry]
        if not new:
            return None
        self._next_entry = int(new[-1]["index"]) + 1
        last = new[-1]
        return UserReply(public=str(last.get("public") or ""), reasoning=last.get("reasoning") or None)

    async def aclose(self) -> None:
        close = getattr(self._env, "close", None)
        if callable(close):
            close()
        if self._shim is not None:
            await self._shim.close()


def userrl_gym_class(
    env_name: str,
    package: UserRLPackage,
    *,
    data_sources: tuple[str, ...] = (),
    choices: tuple[str, ...] = ("action", "answer", "search"),
) -> type[UserRLGym]:
    """A :class:`UserRLGym` subclass named ``env_name`` running ``package`` (the registry makes one per gym)."""
    attrs = {"env_name": env_name, "data_sources": data_sources, "choices": choices, "package": package}
    return type(f"UserRL{env_name}", (UserRLGym,), attrs)
