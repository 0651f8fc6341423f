"""Optional adapter: run an installed UserRL gym package (``travelgym``, ``taugym``, …) as a mimesis gym.

Nothing in mimesis-pl depends on it; the packages are imported only when an adapted gym is built.
The adapter converts an :class:`Action` into UserRL's action string (``"[action] …"``), takes the
observation's ``feedback`` text, and ends the episode on ``terminated or truncated``. UserRL's own
rewards are used, bounded by the base class: a negative step reward becomes 0 and a step that would
push the episode sum past 1 (UserRL's Intention and Persuade can) is clipped, both flagged in
``info["reward_clipped"]``.

The UserRL gyms read their simulator endpoint from their own config (``base_url``, ``model_name``);
pass those in ``config``. They are not bound per episode to the shim.

Usage::

    TravelAdapter = userrl_gym_class("TravelGym", data_sources=("interact_travelgym",))
    registry = default_registry(); registry.register(TravelAdapter)
    EnvironmentManager(registry=registry, gym_options={"TravelGym": {"config": {"model_name": "mimesis-9b"}}})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from mimesis_pl.envs.base import Action, Gym, StepResult
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.user_protocol import UserSimulator

# env_name → (module, class, row field naming the task)
USERRL_PACKAGES: dict[str, tuple[str, str, str]] = {
    "TravelGym": ("travelgym", "TravelEnv", "id"),
    "TurtleGym": ("turtlegym", "StoryEnv", "title"),
    "TelepathyGym": ("telepathygym", "TelepathyEnv", "title"),
    "IntentionGym": ("intentiongym", "IntentionEnv", "id"),
    "PersuadeGym": ("persuadegym", "PersuadeEnv", "id"),
    "FunctionGym": ("functiongym", "FunctionEnv", "id"),
    "TauGym": ("taugym", "TauEnv", "id"),
    "SearchGym": ("searchgym", "SearchEnv", "id"),
}

EnvFactory = Callable[[GymTask], Any]


def userrl_env_factory(env_name: str, config: Mapping[str, Any] | None = None) -> EnvFactory:
    """A factory building the installed UserRL env for one task (``data_mode="single"``)."""
    if env_name not in USERRL_PACKAGES:
        raise ValueError(f"no UserRL package known for {env_name!r}; known: {sorted(USERRL_PACKAGES)}")
    module_name, class_name, key = USERRL_PACKAGES[env_name]

    def build(task: GymTask) -> Any:
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            raise ImportError(f"{env_name} adapter needs the UserRL package {module_name!r} installed: {err}") from None
        cfg = module.get_default_config()
        cfg.data_mode = "single"
        cfg.data_source = task.hidden.get(key)
        for name, value in (config or {}).items():
            setattr(cfg, name, value)
        return getattr(module, class_name)(cfg)

    return build


class UserRLGym(Gym):
    """Wraps any env with ``reset()`` and ``step_async(str)`` (or ``step(str)``) returning gymnasium tuples."""

    env_name = "UserRLGym"
    choices = ("action", "answer", "search")
    needs_user = False

    def __init__(
        self,
        *,
        user: UserSimulator | None = None,
        env_factory: EnvFactory | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(user=user)
        self._factory = env_factory or userrl_env_factory(self.env_name, config)
        self._env: Any = None

    async def _reset(self, task: GymTask) -> None:
        self._env = self._factory(task)
        self._env.reset()

    async def _step(self, action: Action) -> StepResult:
        text = f"[{action.choice}] {action.content}"
        if hasattr(self._env, "step_async"):
            observation, reward, terminated, truncated, info = await self._env.step_async(text)
        else:
            observation, reward, terminated, truncated, info = self._env.step(text)
        feedback = observation.get("feedback", "") if isinstance(observation, Mapping) else str(observation)
        done = bool(terminated or truncated)
        return self._result(str(feedback), float(reward), done=done, userrl_info=info)

    async def aclose(self) -> None:
        close = getattr(self._env, "close", None)
        if callable(close):
            close()


def userrl_gym_class(
    env_name: str, *, data_sources: tuple[str, ...] = (), choices: tuple[str, ...] = ("action", "answer", "search")
) -> type[UserRLGym]:
    """A :class:`UserRLGym` subclass registered under ``env_name`` (to put in a :class:`GymRegistry`)."""
    return type(
        f"UserRL{env_name}", (UserRLGym,), {"env_name": env_name, "data_sources": data_sources, "choices": choices}
    )
