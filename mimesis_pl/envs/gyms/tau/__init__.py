"""TauGym (tau-bench retail/airline tasks), its HTTP tool runtimes and our own offline retail environment,
declared by :data:`SPEC` (a scripted user rule; no scripted expert)."""

from collections.abc import Mapping

from mimesis_pl.envs.gyms.tau.gym import (
    RetailRuntimeSettings,
    TauGym,
    TauHttpRuntimeSettings,
    TauRuntimeSettings,
    parse_task_id,
    parse_tool_call,
    scripted_reply,
)
from mimesis_pl.envs.gyms.tau.runtime import RetailRuntime, TauBenchRuntime, TauHttpRuntime, make_tau_app, serve_runtime
from mimesis_pl.envs.spec import GymSpec, UserRLPackage


def userrl_task_config(task_key: str) -> Mapping[str, str]:
    """The tau-bench domain and split UserRL's eval.py gives a task: ``"airline-007"`` → airline, test (A81)."""
    return {
        "task_category": "retail" if "retail" in task_key else "airline",
        "task_split": "train" if "train" in task_key else "test",
    }


# UserRL's Tau config writes its URL into the process environment: no per-episode base_url (A47).
SPEC = GymSpec(
    gym=TauGym,
    user_rule=scripted_reply,
    userrl=UserRLPackage("taugym", "TauEnv", scoped_base_url=False, task_config=userrl_task_config),
)

__all__ = [
    "RetailRuntime",
    "RetailRuntimeSettings",
    "SPEC",
    "TauBenchRuntime",
    "TauGym",
    "TauHttpRuntime",
    "TauHttpRuntimeSettings",
    "TauRuntimeSettings",
    "make_tau_app",
    "parse_task_id",
    "parse_tool_call",
    "serve_runtime",
    "userrl_task_config",
]
