"""Evaluation: replay with teacher forcing (``eval.replay``), episodes over gyms where the environment
owns the trajectory (``eval.episodes``), trials of agent evaluation (``eval.trials``: keys, resumable
cache, retries, aggregation), the agent under test built from settings (``eval.agent_backend``), the
evaluation DataModules (``eval.datamodules``), report writers (``eval.report``, one table writer in
``eval.tables``), the frozen JSON values they share (``eval.values``) and the simulator-fidelity suites
(``eval.simulator``).

Replay and episode results are different measurements and are reported separately.
"""

from mimesis_pl.eval.failures import RetryPolicy, RetryResult, classify_failure, run_with_retries
from mimesis_pl.failures import (
    AgentTransportFailure,
    EnvironmentFailure,
    FailureKind,
    InfrastructureFailure,
    JudgeFailure,
    SimulatorFailure,
)

__all__ = [
    "AgentTransportFailure",
    "EnvironmentFailure",
    "FailureKind",
    "InfrastructureFailure",
    "JudgeFailure",
    "RetryPolicy",
    "RetryResult",
    "SimulatorFailure",
    "classify_failure",
    "run_with_retries",
]
