"""The built-in gyms: one :class:`~mimesis_pl.envs.spec.GymSpec` entry each, in one list.

Every consumer of a gym's parts looks the gym up here (through :class:`~mimesis_pl.envs.registry.GymRegistry`
or :func:`builtin_spec`): the scripted user's rules, the expert recorder, ``prepare-gyms`` and the UserRL
adapter. A new gym is its module (the class and its ``SPEC``) plus one entry below.
"""

from __future__ import annotations

from mimesis_pl.envs.gyms import cue, function, intention, persuade, search, tau, telepathy, travel, turtle
from mimesis_pl.envs.spec import GymSpec

BUILTIN_SPECS: tuple[GymSpec, ...] = (
    function.SPEC,
    telepathy.SPEC,
    turtle.SPEC,
    intention.SPEC,
    persuade.SPEC,
    travel.SPEC,
    search.SPEC,
    tau.SPEC,
    cue.SPEC,  # ours, not UserRL's: a gym where CSD's private evidence matters (docs/decisions.md A94)
)


def builtin_spec(name: str) -> GymSpec | None:
    """The built-in spec whose ``env_name`` is ``name``, or ``None``."""
    return next((spec for spec in BUILTIN_SPECS if spec.name == name), None)
