"""torchmetrics and pure estimators for evaluation (pass@k, pass^k, avg@n, reward stats)."""

from mimesis_pl.metrics.estimators import (
    avg_at_n,
    mean_over_tasks,
    pass_at_k,
    pass_at_k_fraction,
    pass_hat_k,
    pass_hat_k_fraction,
)
from mimesis_pl.metrics.pass_k import AvgAtN, PassAtK, PassHatK, pass_at_k_tensor, pass_hat_k_tensor
from mimesis_pl.metrics.reward_stats import RewardStats

__all__ = [
    "AvgAtN",
    "PassAtK",
    "PassHatK",
    "RewardStats",
    "avg_at_n",
    "mean_over_tasks",
    "pass_at_k",
    "pass_at_k_fraction",
    "pass_at_k_tensor",
    "pass_hat_k",
    "pass_hat_k_fraction",
    "pass_hat_k_tensor",
]
