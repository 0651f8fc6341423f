"""The task registry, keyed by ``data_source``: one :class:`TaskSpec` per task (its factory and its options).

Each spec names the module and factory that build its task; modules are imported on first use, so one task's
missing dependency or data never breaks another. An unknown key is an error that lists every known one (the
reference once fell back to a default task and mis-scored typos). A user's package adds tasks with
``model.init_args.tasks: [my_pkg.tasks:SPECS]`` (docs/extending.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Literal, get_args

from ..checks import import_object
from .base import Task

_PERSONA = "mimesis_pl.tasks.persona"
_TOM = "mimesis_pl.tasks.tom"
_HUMANUAL = "mimesis_pl.tasks.humanual:humanual"
HUMANUAL_KINDS = ("book", "chat", "email", "news", "opinion", "politics")
_ALIGNX_KINDS = ("demo", "pair", "ugc", "arbitrary", "history16")
_ALIGNX_NAMES = ("Demo", "Pair", "UGC", "Arbitrary", "History16")


#: The SOUL suite's five axes, in report order (docs/decisions.md S23).
SoulAxis = Literal["CONV", "SS", "COG", "ROLE", "EVAL"]
SOUL_AXIS_ORDER: tuple[SoulAxis, ...] = get_args(SoulAxis)


@dataclass(frozen=True)
class TaskSpec:
    """One simulator-RL task, keyed by the ``data_source`` of its rows.

    ``factory``: ``"package.module:function"``, a function that takes the data_source and returns the task (imported
    on first use, so one task's missing dependency never breaks another); ``options``: the ``task_options`` keys
    the task reads (any other key is refused at set-up); ``soul_axis``: the SOUL axis whose mean this data set
    enters (``None``: not a SOUL set); ``name``: the set's display name in reports (default: the data_source).
    """

    data_source: str
    factory: str
    options: tuple[str, ...] = ()
    soul_axis: SoulAxis | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if self.soul_axis is not None and self.soul_axis not in SOUL_AXIS_ORDER:
            raise ValueError(
                f"TaskSpec {self.data_source!r}: soul_axis must be one of {list(SOUL_AXIS_ORDER)} or None, "
                f"got {self.soul_axis!r}"
            )

    @property
    def display_name(self) -> str:
        return self.name or self.data_source


def _humanual(kind: str, axis: SoulAxis) -> TaskSpec:
    return TaskSpec(f"humanual-{kind}", _HUMANUAL, ("untagged_factor",), axis, f"Humanual-{kind.title()}")


def _alignx(kind: str, name: str) -> TaskSpec:
    return TaskSpec(f"alignx_{kind}", f"{_PERSONA}:alignx", (), "EVAL", f"AlignX-{name}")


#: The built-in tasks, one :class:`TaskSpec` per data_source: where its task is built, the options it reads, its
#: SOUL axis and display name. The 27 SOUL sets come first, in the SOUL report's order.
_BUILTIN = (
    TaskSpec("userllm", "mimesis_pl.tasks.userllm:userllm", (), "CONV", "UserLLM"),
    TaskSpec("mirrorbench", "mimesis_pl.tasks.mirrorbench:mirrorbench", ("max_turns",), "CONV", "MirrorBench"),
    _humanual("chat", "CONV"),
    TaskSpec("sim_arena_doc", "mimesis_pl.tasks.sim_arena:sim_arena_doc", ("max_user_turns",), "CONV", "SimArena-Doc"),
    TaskSpec("sotopia", "mimesis_pl.tasks.sotopia:sotopia", ("max_turns",), "SS", "Sotopia-Hard"),
    TaskSpec("fantom", f"{_TOM}:fantom", (), "COG", "Fantom"),
    TaskSpec("hitom", f"{_TOM}:hitom", (), "COG", "Hitom"),
    TaskSpec("paratomi", f"{_TOM}:paratomi", (), "COG", "Paratomi"),
    TaskSpec("social_r1", f"{_PERSONA}:social_r1", (), "COG", "Social-R1"),
    TaskSpec("coser", "mimesis_pl.tasks.coser:coser", ("max_rounds",), "ROLE", "Coser"),
    TaskSpec("lifechoices", f"{_PERSONA}:lifechoices", (), "ROLE", "Lifechoices"),
    TaskSpec("twinvoice", f"{_PERSONA}:twinvoice", (), "ROLE", "Twinvoice"),
    TaskSpec("behavior_chain", f"{_PERSONA}:behavior_chain", (), "ROLE", "BehaviorChain"),
    TaskSpec(
        "sim_arena_math", "mimesis_pl.tasks.sim_arena:sim_arena_math", ("max_user_turns",), "ROLE", "SimArena-Math"
    ),
    TaskSpec("mistakes", f"{_PERSONA}:mistakes", (), "ROLE", "Mistakes"),
    *(_humanual(kind, "ROLE") for kind in ("email", "news", "politics", "book", "opinion")),
    *(_alignx(kind, name) for kind, name in zip(_ALIGNX_KINDS, _ALIGNX_NAMES, strict=True)),
    TaskSpec("socsci210", f"{_PERSONA}:socsci210", (), "EVAL", "SocSci210"),
    TaskSpec("humanllm", f"{_PERSONA}:humanllm", (), "EVAL", "HumanLLM"),
    # routed, trained, but not SOUL sets
    TaskSpec("alignx", f"{_PERSONA}:alignx"),
    TaskSpec("humanual", _HUMANUAL, ("untagged_factor",)),
    TaskSpec("usersim-behavior", "mimesis_pl.tasks.usersim_behavior.task:usersim_behavior", ("abcd_dir",)),
)
BUILTIN_TASKS: Mapping[str, TaskSpec] = MappingProxyType({spec.data_source: spec for spec in _BUILTIN})

# Task specs from users' own packages (``model.init_args.tasks`` in YAML, or :func:`register_task`), by data_source.
_EXTRA: dict[str, TaskSpec] = {}


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add a task of your own, by its data_source; registering the same spec again is a no-op."""
    if not isinstance(spec, TaskSpec):
        raise TypeError(f"register_task takes a TaskSpec, got {type(spec).__name__}")
    known = BUILTIN_TASKS.get(spec.data_source) or _EXTRA.get(spec.data_source)
    if known is not None and known != spec:
        raise ValueError(f"data_source {spec.data_source!r} is already taken by the task built by {known.factory}")
    if spec.data_source not in BUILTIN_TASKS:
        _EXTRA[spec.data_source] = spec
    return spec


def import_tasks(path: str, *, key: str = "model.init_args.tasks") -> list[TaskSpec]:
    """Import and register the task specs at ``path`` (``package.module:NAME``: a TaskSpec or a sequence of them)."""
    target = import_object(path, key=key)
    specs = [target] if isinstance(target, TaskSpec) else list(target) if isinstance(target, (list, tuple)) else []
    if not specs or not all(isinstance(spec, TaskSpec) for spec in specs):
        raise ValueError(f"{key}: {path!r} is a {type(target).__name__}, not a TaskSpec or a list of them")
    return [register_task(spec) for spec in specs]


def task_specs() -> dict[str, TaskSpec]:
    """Every task by data_source: the built-in ones, then those registered from users' packages."""
    return {**BUILTIN_TASKS, **_EXTRA}


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


def soul_axes() -> dict[SoulAxis, tuple[str, ...]]:
    """The SOUL axis map from every registered task's ``soul_axis``: axis → its data sets, in registration order
    (computed on each call, so a task registered from a user's package is in it)."""
    specs = task_specs().values()
    return {axis: tuple(s.data_source for s in specs if s.soul_axis == axis) for axis in SOUL_AXIS_ORDER}


def known_data_sources() -> list[str]:
    return sorted(task_specs())


def get_task(data_source: str) -> Task:
    """The task registered under ``data_source`` (exact match; built once per spec)."""
    spec = task_specs().get(data_source)
    if spec is None:
        raise UnknownTaskError(
            f"unknown data_source {data_source!r}; known data sources: {', '.join(known_data_sources())}"
        )
    return _build(spec)


@cache
def _build(spec: TaskSpec) -> Task:
    module_name, factory = spec.factory.split(":")
    return getattr(importlib.import_module(module_name), factory)(spec.data_source)
