"""Evaluation: replay with teacher forcing (``eval.replay``), agent evaluation over gyms
(``eval.trials``: keys, resumable cache, retries, aggregation) and report writers (``eval.report``).

Replay and episode results are different measurements and are reported separately.
"""

from mimesis_pl.eval.failures import (
    AgentTransportFailure,
    EnvironmentFailure,
    FailureKind,
    InfrastructureFailure,
    JudgeFailure,
    RetryPolicy,
    RetryResult,
    SimulatorFailure,
    classify_failure,
    run_with_retries,
)

__all__ = [
    "AgentTransportFailure", "EnvironmentFailure", "FailureKind", "InfrastructureFailure", "JudgeFailure",
    "RetryPolicy", "RetryResult", "SimulatorFailure", "classify_failure", "run_with_retries",
]
