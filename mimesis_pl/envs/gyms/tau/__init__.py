"""TauGym (tau-bench retail/airline tasks), its HTTP tool runtimes and our own offline retail environment,
declared by :data:`SPEC` (a scripted user rule; no scripted expert)."""

from mimesis_pl.envs.gyms.tau.gym import TauGym, TauRuntimeSettings, parse_task_id, parse_tool_call, scripted_reply
from mimesis_pl.envs.gyms.tau.runtime import RetailRuntime, TauBenchRuntime, TauHttpRuntime, make_tau_app, serve_runtime
from mimesis_pl.envs.spec import GymSpec, UserRLPackage

# UserRL's Tau config writes its URL into the process environment: no per-episode base_url (A47).
SPEC = GymSpec(gym=TauGym, user_rule=scripted_reply, userrl=UserRLPackage("taugym", "TauEnv", scoped_base_url=False))

__all__ = [
    "RetailRuntime",
    "SPEC",
    "TauBenchRuntime",
    "TauGym",
    "TauHttpRuntime",
    "TauRuntimeSettings",
    "make_tau_app",
    "parse_task_id",
    "parse_tool_call",
    "serve_runtime",
]
