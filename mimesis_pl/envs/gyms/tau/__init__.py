"""TauGym (tau-bench retail/airline tasks), its HTTP tool runtimes and our own offline retail environment."""

from mimesis_pl.envs.gyms.tau.gym import TauGym, TauRuntimeSettings, parse_task_id, parse_tool_call
from mimesis_pl.envs.gyms.tau.runtime import RetailRuntime, TauBenchRuntime, TauHttpRuntime, make_tau_app, serve_runtime

__all__ = [
    "RetailRuntime",
    "TauBenchRuntime",
    "TauGym",
    "TauHttpRuntime",
    "TauRuntimeSettings",
    "make_tau_app",
    "parse_task_id",
    "parse_tool_call",
    "serve_runtime",
]
