"""Agent evaluation over gyms, the pure parts: trial keys, the resumable cache, the runner, aggregation."""

from mimesis_pl.eval.trials.aggregate import (
    GYM_SUCCESS_RULES,
    GymSummary,
    SuccessRule,
    aggregate_trials,
    success_rule_for,
    trial_matrix,
)
from mimesis_pl.eval.trials.cache import TrialCache, TrialRecord
from mimesis_pl.eval.trials.keys import (
    HARNESS_VERSION,
    RunIdentity,
    TrialKey,
    config_hash,
    content_hash,
    join_id,
)
from mimesis_pl.eval.trials.runner import TaskRef, TrialFn, TrialOutcome, TrialRunReport, pending_trials, run_trials

__all__ = [
    "GYM_SUCCESS_RULES",
    "GymSummary",
    "HARNESS_VERSION",
    "RunIdentity",
    "SuccessRule",
    "TaskRef",
    "TrialCache",
    "TrialFn",
    "TrialKey",
    "TrialOutcome",
    "TrialRecord",
    "TrialRunReport",
    "aggregate_trials",
    "config_hash",
    "content_hash",
    "join_id",
    "pending_trials",
    "run_trials",
    "success_rule_for",
    "trial_matrix",
]
