"""The per-``data_source`` settings a task reads from ``task_options``, and the check that rejects typos.

A key nobody reads (``max_turn`` for ``max_turns``, a family that does not exist) used to be ignored, so a run
silently used the defaults; :func:`check_task_options` makes it an error that lists what is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .registry import HUMANUAL_KINDS, ROUTES

#: data_source → the option names its task reads (tests check this table against the tasks' code).
TASK_OPTIONS: dict[str, tuple[str, ...]] = {
    "sotopia": ("max_turns",),
    "coser": ("max_rounds",),
    "mirrorbench": ("max_turns",),
    "sim_arena_math": ("max_user_turns",),
    "sim_arena_doc": ("max_user_turns",),
    "usersim-behavior": ("abcd_dir",),
    **{key: ("untagged_factor",) for key in ("humanual", *(f"humanual-{k}" for k in HUMANUAL_KINDS))},
}


def check_task_options(options: Mapping[str, Any], where: str = "model.init_args.task_options") -> None:
    """Raise ``ValueError`` naming the first unknown data source or option key in ``options``."""
    for source, settings in options.items():
        if source not in ROUTES:
            raise ValueError(f"{where}: unknown data_source {source!r}; known: {', '.join(sorted(ROUTES))}")
        if not isinstance(settings, Mapping):
            raise ValueError(f"{where}.{source} must be a mapping of option: value, got {settings!r}")
        accepted = TASK_OPTIONS.get(source, ())
        for key in settings:
            if key not in accepted:
                known = ", ".join(accepted) if accepted else "none (this task reads no options)"
                raise ValueError(f"{where}.{source}: unknown option {key!r}; accepted: {known}")
