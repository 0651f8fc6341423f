"""Checks of a simulator-RL configuration that must fail (or say so) before the first rollout, not after it."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

HEADLINE_METRICS = (
    "score",
    "format_correct",
    "think_tokens",
    "score_v3",
    "judge_failed_rate",
    "task_error_rate",
)


def check_best_metric(name: str) -> None:
    """Reject a ``best_metric`` that no simulator-RL validation can log, before the first validation run.

    Validation logs ``val-core/all/<headline>``, ``val-core/<data_source>/reward/mean@1`` and
    ``val-aux/<data_source>/<key>/mean@1`` (:func:`~mimesis_pl.tasks.runner.validation_metrics`).
    """
    from ..tasks.registry import task_specs

    where = "model.init_args.validation.best_metric"
    parts = name.split("/")
    if parts[:2] == ["val-core", "all"] and len(parts) == 3:
        if parts[2] in HEADLINE_METRICS:
            return
        raise ValueError(f"{where}={name!r}: unknown headline; val-core/all/ has: {', '.join(HEADLINE_METRICS)}")
    if len(parts) >= 4 and parts[0] in ("val-core", "val-aux") and parts[-1] == "mean@1":
        if parts[1] not in task_specs():
            known = ", ".join(sorted(task_specs()))
            raise ValueError(f"{where}={name!r}: unknown data_source {parts[1]!r}; known: {known}")
        if parts[0] == "val-aux" or parts[2:] == ["reward", "mean@1"]:
            return
    raise ValueError(
        f"{where}={name!r} is not a simulator-RL validation metric; use val-core/all/<{'|'.join(HEADLINE_METRICS)}>, "
        "val-core/<data_source>/reward/mean@1 or val-aux/<data_source>/<key>/mean@1"
    )


def has_val_rows(datamodule: Any) -> bool:
    """Whether there is anything to validate on: val files without rows are an error, no val files a warning."""
    if getattr(datamodule, "val_rows", None):
        return True
    files = list(getattr(datamodule, "val_files", None) or [])
    if files:
        raise ValueError(
            f"data.init_args.val_files {files} hold no rows, but model.init_args.validation is set; give val rows "
            "or set validation: null to train without validation"
        )
    log.warning(
        "no validation: model.init_args.validation is set but data.init_args.val_files is empty "
        "(set validation: null to silence this)"
    )
    return False
