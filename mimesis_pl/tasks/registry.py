"""The task registry, keyed by ``data_source``.

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
_HUMANUAL = "mimesis_pl.tasks.humanual:humanual"
HUMANUAL_KINDS = ("book", "chat", "email", "news", "opinion", "politics")

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
    "sotopia": "mimesis_pl.tasks.sotopia:sotopia",
    "coser": "mimesis_pl.tasks.coser:coser",
    "mirrorbench": "mimesis_pl.tasks.mirrorbench:mirrorbench",
    "userllm": "mimesis_pl.tasks.userllm:userllm",
    "sim_arena_math": "mimesis_pl.tasks.sim_arena:sim_arena_math",
    "sim_arena_doc": "mimesis_pl.tasks.sim_arena:sim_arena_doc",
    "humanual": _HUMANUAL,  # generic, routed but not in the mixture
    **{f"humanual-{kind}": _HUMANUAL for kind in HUMANUAL_KINDS},
}

#: The mixture's 24 tasks: task name → (train file, val file, val data_source).
MIXTURE: dict[str, tuple[str, str, str]] = {
    "sotopia": ("sotopia_clean_rl.parquet", "sotopia_hard_val.parquet", "sotopia"),
    "coser": ("coser_rl_train.parquet", "coser_val.parquet", "coser"),
    "lifechoices": ("lifechoices_hard_rl.parquet", "lifechoices_val.parquet", "lifechoices"),
    "userllm": ("userllm_rl_train.parquet", "userllm_val.parquet", "userllm"),
    "mirrorbench": ("mirrorbench_rl_train.parquet", "mirrorbench_val.parquet", "mirrorbench"),
    "fantom": ("fantom_rl_train.parquet", "fantom_val.parquet", "fantom"),
    "hitom": ("hitom_rl_train.parquet", "hitom_val.parquet", "hitom"),
    "paratomi": ("paratomi_rl_train.parquet", "paratomi_val.parquet", "paratomi"),
    "mistakes": ("mistakes_rl_train.parquet", "mistakes_val.parquet", "mistakes"),
    "twinvoice": ("twinvoice_rl_train.parquet", "twinvoice_val.parquet", "twinvoice"),
    "social_r1": ("social_r1_rl.parquet", "social_r1_val.parquet", "social_r1"),
    "behaviorchain": ("behaviorchain_rl_train.parquet", "behaviorchain_val.parquet", "behavior_chain"),
    "sim_math": ("sim_math_rl.parquet", "sim_math_val.parquet", "sim_arena_math"),
    "sim_doc": ("sim_doc_rl.parquet", "sim_doc_val.parquet", "sim_arena_doc"),
    **{
        f"humanual_{k}": (f"humanual_rl_{k}.parquet", f"humanual_{k}_val.parquet", f"humanual-{k}")
        for k in ("book", "chat", "email", "news", "opinion", "politics")
    },
    "alignx": ("alignx_rl_8k.parquet", "alignx_demo_val.parquet", "alignx_demo"),
    "socsci210": ("socsci210_rl_2k.parquet", "socsci210_val.parquet", "socsci210"),
    "humanllm": ("humanllm_rl_train.parquet", "humanllm_val.parquet", "humanllm"),
    "usersim_behavior": ("usersim_behavior_rl_train.parquet", "usersim_behavior_val.parquet", "usersim-behavior"),
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
