"""The per-``data_source`` settings a task reads from ``task_options``, and the check that rejects typos.

A key nobody reads (``max_turn`` for ``max_turns``, a family that does not exist) used to be ignored, so a run
silently used the defaults; :func:`check_task_options` makes it an error that lists what is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .registry import task_specs


def check_task_options(options: Mapping[str, Any], where: str = "model.init_args.task_options") -> None:
    """Raise ``ValueError`` naming the first unknown data source or option key in ``options``."""
    specs = task_specs()
    for source, settings in options.items():
        if source not in specs:
            raise ValueError(f"{where}: unknown data_source {source!r}; known: {', '.join(sorted(specs))}")
        if not isinstance(settings, Mapping):
            raise ValueError(f"{where}.{source} must be a mapping of option: value, got {settings!r}")
        accepted = specs[source].options
        for key in settings:
            if key not in accepted:
                known = ", ".join(accepted) if accepted else "none (this task reads no options)"
                raise ValueError(f"{where}.{source}: unknown option {key!r}; accepted: {known}")
