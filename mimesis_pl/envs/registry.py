"""Gym classes by name: UserRL's ``env_name`` (``TelepathyGym``) or a parquet ``data_source``
(``interact_telepathygym``).

One registry holds both kinds of gym (docs/decisions.md A46): the built-in ones, and UserRL's installed
packages run through :mod:`mimesis_pl.envs.userrl_adapter`. Both are named the same way in YAML, by
``env_name`` under ``episode.gym_options``; a gym's options holding ``userrl: {...}`` (the UserRL config
fields, may be empty) select the adapter for that name::

    gym_options:
      TravelGym: {preference_correct_reward: 0.6}      # built in
      TauGym: {userrl: {user_model: gpt-4o}}           # UserRL's taugym package, through the adapter
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mimesis_pl.envs.base import Gym
from mimesis_pl.envs.gyms.function import FunctionGym
from mimesis_pl.envs.gyms.intention import IntentionGym
from mimesis_pl.envs.gyms.persuade import PersuadeGym
from mimesis_pl.envs.gyms.search import SearchGym
from mimesis_pl.envs.gyms.tau import TauGym
from mimesis_pl.envs.gyms.telepathy import TelepathyGym
from mimesis_pl.envs.gyms.travel import TravelGym
from mimesis_pl.envs.gyms.turtle import TurtleGym
from mimesis_pl.envs.userrl_adapter import ADAPTER_OPTION, USERRL_PACKAGES, userrl_gym_class


class GymRegistry:
    """A name → gym class table; lookups accept ``env_name`` or any of the class's ``data_sources``.

    ``adapters`` (default: every UserRL package the adapter knows) are the names that may also run
    through the UserRL adapter; :meth:`resolve` picks the adapter when a gym's options ask for it.
    """

    def __init__(self, classes: tuple[type[Gym], ...] = (), adapters: Mapping[str, Any] | None = None) -> None:
        self._by_name: dict[str, type[Gym]] = {}
        self._aliases: dict[str, str] = {}
        self._adapters: dict[str, type[Gym]] = {}
        for name, (_, _, _, data_source) in (USERRL_PACKAGES if adapters is None else adapters).items():
            self._adapters[name] = userrl_gym_class(name, data_sources=(data_source,))
            self._aliases[data_source] = name
        for cls in classes:
            self.register(cls)

    def register(self, cls: type[Gym]) -> type[Gym]:
        name = cls.env_name
        known = self._by_name.get(name)
        if known is not None and known is not cls:
            raise ValueError(f"gym name {name!r} is already registered to {known.__qualname__}")
        self._by_name[name] = cls
        for alias in cls.data_sources:
            self._aliases[alias] = name
        return cls

    def _key(self, name: str) -> str:
        key = self._aliases.get(name, name)
        if key not in self._by_name and key not in self._adapters:
            raise ValueError(
                f"unknown gym {name!r}; known: {sorted(self._by_name)} (or data sources {sorted(self._aliases)}); "
                f"through the UserRL adapter: {sorted(self._adapters)}"
            )
        return key

    def get(self, name: str) -> type[Gym]:
        """The built-in class of ``name``; an adapter-only name says how to select the adapter."""
        key = self._key(name)
        if key not in self._by_name:
            raise ValueError(
                f"gym {name!r} is not built in; run UserRL's package through the adapter with "
                f"episode.gym_options.{key}.{ADAPTER_OPTION}: {{...UserRL config fields...}}"
            )
        return self._by_name[key]

    def resolve(self, name: str, options: Mapping[str, Any] | None = None) -> tuple[type[Gym], dict[str, Any]]:
        """The class that runs ``name`` under ``options`` and the constructor options to pass it."""
        options = dict(options or {})
        key = self._key(name)
        if ADAPTER_OPTION in options:
            config = options.pop(ADAPTER_OPTION) or {}
            if key not in self._adapters:
                raise ValueError(f"gym {name!r}: no UserRL package known for the adapter ({sorted(self._adapters)})")
            return self._adapters[key], {**options, "config": dict(config)}
        return self.get(key), options

    def canonical_name(self, name: str) -> str:
        return self._key(name)

    def names(self) -> list[str]:
        return sorted(self._by_name)


BUILTIN_GYMS: tuple[type[Gym], ...] = (
    FunctionGym,
    TelepathyGym,
    TurtleGym,
    IntentionGym,
    PersuadeGym,
    TravelGym,
    SearchGym,
    TauGym,
)


def default_registry() -> GymRegistry:
    """A fresh registry holding the built-in offline gyms (and every UserRL package, for the adapter)."""
    return GymRegistry(BUILTIN_GYMS)
