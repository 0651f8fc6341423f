"""Moved: the simulator-RL configuration checks live in :mod:`mimesis_pl.stages.simulator_checks`; these names stay
importable from here (docs/decisions.md D15)."""

from ..stages.simulator_checks import HEADLINE_METRICS, check_best_metric, has_val_rows

__all__ = ["HEADLINE_METRICS", "check_best_metric", "has_val_rows"]
