"""Gym classes by name: UserRL's ``env_name`` (``TelepathyGym``) or a parquet ``data_source``
(``interact_telepathygym``)."""

from __future__ import annotations

from mimesis_pl.envs.base import Gym
from mimesis_pl.envs.gyms.function import FunctionGym
from mimesis_pl.envs.gyms.intention import IntentionGym
from mimesis_pl.envs.gyms.persuade import PersuadeGym
from mimesis_pl.envs.gyms.search import SearchGym
from mimesis_pl.envs.gyms.tau import TauGym
from mimesis_pl.envs.gyms.telepathy import TelepathyGym
from mimesis_pl.envs.gyms.turtle import TurtleGym


class GymRegistry:
    """A name → gym class table; lookups accept ``env_name`` or any of the class's ``data_sources``."""

    def __init__(self, classes: tuple[type[Gym], ...] = ()) -> None:
        self._by_name: dict[str, type[Gym]] = {}
        self._aliases: dict[str, str] = {}
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

    def get(self, name: str) -> type[Gym]:
        key = self._aliases.get(name, name)
        if key not in self._by_name:
            raise ValueError(
                f"unknown gym {name!r}; known: {sorted(self._by_name)} (or data sources {sorted(self._aliases)})"
            )
        return self._by_name[key]

    def canonical_name(self, name: str) -> str:
        return self.get(name).env_name

    def names(self) -> list[str]:
        return sorted(self._by_name)


BUILTIN_GYMS: tuple[type[Gym], ...] = (FunctionGym, TelepathyGym, TurtleGym, IntentionGym, PersuadeGym)
BUILTIN_GYMS += (SearchGym, TauGym)


def default_registry() -> GymRegistry:
    """A fresh registry holding the built-in offline gyms."""
    return GymRegistry(BUILTIN_GYMS)
