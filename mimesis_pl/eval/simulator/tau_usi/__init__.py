"""tau-USI: the simulator plays tau-bench customers against a fixed agent with a tool runtime.

``suite`` (the :class:`TauUSISuite`), ``scoring`` (Dice-Sorensen, ECE, USI; pure), ``report`` (the summary over
batches and ``results.md``), ``features`` (D1-D4),
``data`` (tasks, human batches, difficulty, the DataModule, the published rows), ``scripted`` (offline agent
and user). The tool runtime stays shared in :mod:`mimesis_pl.envs.gyms.tau.tool_runtime` (TauGym serves it
too). The old ``tau_usi`` module's names are re-exported here (YAML ``class_path`` keeps working).
"""

from mimesis_pl.eval.simulator.tau_usi.suite import (
    GREETING,
    SIM_RULES,
    HttpRuntimeSettings,
    RuntimeSettings,
    ScriptedHttpRuntimeSettings,
    TauUSISuite,
)

__all__ = [
    "GREETING",
    "HttpRuntimeSettings",
    "RuntimeSettings",
    "SIM_RULES",
    "ScriptedHttpRuntimeSettings",
    "TauUSISuite",
]
