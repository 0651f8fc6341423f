"""Gym classes by name: UserRL's ``env_name`` (``TelepathyGym``) or a parquet ``data_source``
(``interact_telepathygym``).

One registry holds both kinds of gym (docs/decisions.md A46): the built-in ones, and UserRL's installed
packages run through :mod:`mimesis_pl.envs.userrl_adapter`. It holds each built-in gym's
:class:`~mimesis_pl.envs.spec.GymSpec` (listed in :mod:`mimesis_pl.envs.catalog`), so the scripted user, the
expert recorder, ``prepare-gyms`` and the adapter find a gym's parts in one place. Both kinds are named the
same way in YAML, by ``env_name`` under ``episode.gym_options``; a gym's options holding ``userrl: {...}``
(the UserRL config fields, may be empty) select the adapter for that name::

    gym_options:
      TravelGym: {preference_correct_reward: 0.6}      # built in
      TauGym: {userrl: {user_model: gpt-4o}}           # UserRL's taugym package, through the adapter
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mimesis_pl.checks import import_object
from mimesis_pl.envs.base import Gym
from mimesis_pl.envs.catalog import BUILTIN_SPECS
from mimesis_pl.envs.gyms.rules import Rule
from mimesis_pl.envs.spec import GymSpec
from mimesis_pl.envs.userrl_adapter import ADAPTER_OPTION, userrl_gym_class


class GymRegistry:
    """A name → gym table; lookups accept ``env_name`` or any of the class's ``data_sources``.

    ``gyms`` are specs, or bare gym classes (a spec with no parts: tests register their own gyms so).
    ``adapters`` (default: every built-in spec with a UserRL package) are the gyms that may also run
    through the UserRL adapter; :meth:`resolve` picks the adapter when a gym's options ask for it.
    """

    def __init__(self, gyms: Iterable[GymSpec | type[Gym]] = (), adapters: Iterable[GymSpec] | None = None) -> None:
        self._by_name: dict[str, GymSpec] = {}
        self._aliases: dict[str, str] = {}
        self._adapters: dict[str, type[Gym]] = {}
        for spec in BUILTIN_SPECS if adapters is None else adapters:
            if spec.userrl is None:
                continue
            self._adapters[spec.name] = userrl_gym_class(spec.name, spec.userrl, data_sources=spec.gym.data_sources)
            self._aliases.update(dict.fromkeys(spec.gym.data_sources, spec.name))
        for gym in gyms:
            self.register(gym)

    def register(self, gym: GymSpec | type[Gym]) -> type[Gym]:
        spec = gym if isinstance(gym, GymSpec) else GymSpec(gym=gym)
        cls, name = spec.gym, spec.name
        known = self._by_name.get(name)
        if known is not None and known.gym is cls and not isinstance(gym, GymSpec):
            return cls  # the bare class again: keep the parts its spec declared
        if known is not None and known.gym is not cls:
            raise ValueError(f"gym name {name!r} is already registered to {known.gym.__qualname__}")
        self._by_name[name] = spec
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

    def spec(self, name: str) -> GymSpec:
        """The spec of built-in gym ``name``; an adapter-only name says how to select the adapter."""
        key = self._key(name)
        if key not in self._by_name:
            raise ValueError(
                f"gym {name!r} is not built in; run UserRL's package through the adapter with "
                f"episode.gym_options.{key}.{ADAPTER_OPTION}: {{...UserRL config fields...}}"
            )
        return self._by_name[key]

    def get(self, name: str) -> type[Gym]:
        """The built-in class of ``name``; an adapter-only name says how to select the adapter."""
        return self.spec(name).gym

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

    def specs(self) -> list[GymSpec]:
        return [self._by_name[name] for name in self.names()]

    def user_rules(self) -> dict[str, Rule]:
        """The scripted user's rule of every gym that has one, by ``env_name``."""
        return {s.name: s.user_rule for s in self.specs() if s.user_rule is not None}

    def compact_prompts(self) -> dict[str, str]:
        """The compact system prompt of every gym that has one, by ``env_name``."""
        return {s.name: s.compact_prompt for s in self.specs() if s.compact_prompt is not None}


BUILTIN_GYMS: tuple[type[Gym], ...] = tuple(spec.gym for spec in BUILTIN_SPECS)

# Gyms from users' own packages (``episode.gyms`` in YAML, or :func:`register_gym`), by env_name. Every registry made
# after a registration holds them, and every part of the package looks gyms up at call time (never a snapshot taken
# at import), so a registered gym trains, evaluates and talks to the scripted user like a built-in one.
_EXTRA: dict[str, GymSpec] = {}


def register_gym(gym: GymSpec | type[Gym]) -> GymSpec | type[Gym]:
    """Add a gym of your own to the package (usable as a class decorator); registering it again is a no-op."""
    spec = gym if isinstance(gym, GymSpec) else GymSpec(gym=gym)
    if not (isinstance(spec.gym, type) and issubclass(spec.gym, Gym)) or not getattr(spec.gym, "env_name", None):
        raise TypeError(f"register_gym: {spec.gym!r} is not a Gym subclass with an env_name")
    builtin = {s.name: s for s in BUILTIN_SPECS}
    known = builtin.get(spec.name) or _EXTRA.get(spec.name)
    if known is not None and known.gym is not spec.gym and not _reloaded(known.gym, spec.gym, builtin):
        raise ValueError(f"gym name {spec.name!r} is already taken by {_path(known.gym)}")
    if spec.name not in builtin and (known is None or known.gym is not spec.gym or isinstance(gym, GymSpec)):
        _EXTRA[spec.name] = spec
    return gym


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _reloaded(known: type[Gym], new: type[Gym], builtin: Mapping[str, GymSpec]) -> bool:
    """The same user class defined again (its module re-imported or reloaded): the new definition replaces it."""
    return known.env_name not in builtin and _path(known) == _path(new)


def import_gym(path: str, *, key: str = "episode.gyms") -> None:
    """Import and register the gym at ``path``: ``package.module:NAME`` naming a
    :class:`~mimesis_pl.envs.spec.GymSpec` or a :class:`~mimesis_pl.envs.base.Gym` subclass."""
    target = import_object(path, key=key)
    if not isinstance(target, GymSpec) and not (isinstance(target, type) and issubclass(target, Gym)):
        raise ValueError(f"{key}: {path!r} is a {type(target).__name__}, not a GymSpec or a Gym subclass")
    register_gym(target)


def all_specs() -> tuple[GymSpec, ...]:
    """The built-in gyms' specs, then those registered from users' packages."""
    return (*BUILTIN_SPECS, *_EXTRA.values())


def default_registry() -> GymRegistry:
    """A fresh registry holding the built-in offline gyms, the registered ones (:func:`register_gym`), and every
    UserRL package, for the adapter."""
    return GymRegistry(all_specs())
