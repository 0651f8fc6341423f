"""The task registry, keyed by ``data_source`` (spec §5.1, §5.4).

Each key names the module and factory that build its task; modules are imported on first use,
so one task's missing dependency or data never breaks another. An unknown key is an error that
lists every known one (the reference once fell back to a default task and mis-scored typos).
"""

from __future__ import annotations

import importlib
from functools import cache

from .base import Task

_PERSONA = "mimesis_pl.tasks.persona"
_TOM = "mimesis_pl.tasks.tom"

#: data_source → "module:factory"; the factory takes the data_source and returns a Task.
ROUTES: dict[str, str] = {
    "fantom": f"{_TOM}:fantom",
    "hitom": f"{_TOM}:hitom",
    "paratomi": f"{_TOM}:paratomi",
    "lifechoices": f"{_PERSONA}:lifechoices",
    "mistakes": f"{_PERSONA}:mistakes",
    "twinvoice": f"{_PERSONA}:twinvoice",
    "social_r1": f"{_PERSONA}:social_r1",
    "behavior_chain": f"{_PERSONA}:behavior_chain",
    "alignx": f"{_PERSONA}:alignx",
    "alignx_demo": f"{_PERSONA}:alignx",
    "alignx_pair": f"{_PERSONA}:alignx",
    "alignx_ugc": f"{_PERSONA}:alignx",
    "alignx_arbitrary": f"{_PERSONA}:alignx",
    "alignx_history16": f"{_PERSONA}:alignx",
    "socsci210": f"{_PERSONA}:socsci210",
    "humanllm": f"{_PERSONA}:humanllm",
    "usersim-behavior": "mimesis_pl.tasks.usersim_behavior.task:usersim_behavior",
}


class UnknownTaskError(KeyError):
    """A ``data_source`` with no registered task."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0])


def known_data_sources() -> list[str]:
    return sorted(ROUTES)


@cache
def get_task(data_source: str) -> Task:
    """The task registered under ``data_source`` (exact match)."""
    if data_source not in ROUTES:
        raise UnknownTaskError(
            f"unknown data_source {data_source!r}; known data sources: {', '.join(known_data_sources())}"
        )
    module_name, factory = ROUTES[data_source].split(":")
    module = importlib.import_module(module_name)
    return getattr(module, factory)(data_source)
