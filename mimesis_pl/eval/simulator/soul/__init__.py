"""SOUL: the validation rows of the 27 SOUL sets run through the simulator-RL tasks.

``suite`` (the :class:`SoulSuite`), ``scoring`` (per set, axis, SOUL-Index; pure), ``report`` (its markdown),
``data`` (the axis map, the rows, the DataModule, the published rows). The names of the old ``soul`` module are
re-exported here, so ``mimesis_pl.eval.simulator.soul.SoulSuite`` (YAML ``class_path``) keeps working.
"""

from mimesis_pl.eval.simulator.soul.suite import (
    FAILURE_STATUS,
    STATUS_FAILURE,
    NoTurnsFailure,
    SoulSimulatorSettings,
    SoulSuite,
    TaskErrorFailure,
    endpoint_identity,
    roles_identity,
    task_row,
)

__all__ = [
    "FAILURE_STATUS",
    "NoTurnsFailure",
    "STATUS_FAILURE",
    "SoulSimulatorSettings",
    "SoulSuite",
    "TaskErrorFailure",
    "endpoint_identity",
    "roles_identity",
    "task_row",
]
