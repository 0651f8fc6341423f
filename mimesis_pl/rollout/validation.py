"""RL validation: greedy episodes on the val split, ``val/*`` metrics, and the best checkpoint.

The reference validates greedily (n = 1) on a held-out split of the training tasks every 5 steps and
at the last step, and keeps the checkpoint of the best ``val-core`` score (the mean over data
sources of each source's mean reward). The pieces here are independent of how episodes are run, so
that every RL stage uses them (both rollout stages take the schedule and the best checkpoint through
``mimesis_pl.stages.base.ValidatingStage``; the agent's reports these metrics, simulator RL's the tasks' own):

- :class:`ValidationSettings` — when to validate and what to keep (YAML keys);
- :func:`validation_due` — whether a step validates;
- :class:`ValidationEpisode`, :func:`summarize`, :func:`merge_summaries`, :func:`validation_metrics` —
  per-rank sums, merged over ranks, into ``val/*`` scalars;
- :func:`gather_summaries` — the merge across processes;
- :class:`BestCheckpoint` — saves ``best-step=N.ckpt`` when the named metric improves;
- :func:`is_last_step`, :func:`report_validation` — the Lightning glue: a stage runs its episodes on
  its share of the val rows (``shard_rows``), turns them into records and calls ``report_validation``.

"Steps" here are training steps (one batch of prompts each), not optimiser steps.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal


@dataclass
class ValidationSettings:
    """Greedy validation on the DataModule's val split (``data.init_args.val_files``).

    Attributes:
        val_every_n_steps: validate after every N training steps (reference: 5); ``None``: never
            during training.
        val_before_train: validate once before the first step of a fresh run (reference: off).
        val_at_end: validate after the last training step (reference: on).
        n_samples: episodes per val prompt (reference: 1).
        temperature: ``0`` = greedy (reference).
        max_new_tokens: per-turn budget; ``None`` takes the training rollout's.
        max_prompts: validate on the first N val prompts only (``None``: all).
        best_metric: the ``val/*`` scalar that picks the best checkpoint (``val/core``, the
            reference's: mean over data sources of the mean reward); ``None``: keep no best.
        best_mode: ``max`` or ``min``.
    """

    val_every_n_steps: int | None = 5
    val_before_train: bool = False
    val_at_end: bool = True
    n_samples: int = 1
    temperature: float = 0.0
    max_new_tokens: int | None = None
    max_prompts: int | None = None
    best_metric: str | None = "val/core"
    best_mode: Literal["max", "min"] = "max"

    #: The prefixes of the scalars a best checkpoint may be chosen by.
    metric_prefixes: ClassVar[tuple[str, ...]] = ("val/",)

    def check(self) -> None:
        if self.val_every_n_steps is not None and self.val_every_n_steps < 1:
            raise ValueError(f"validation.val_every_n_steps must be >= 1 or null, got {self.val_every_n_steps}")
        if self.n_samples < 1:
            raise ValueError(f"validation.n_samples must be >= 1, got {self.n_samples}")
        if self.best_mode not in ("max", "min"):
            raise ValueError(f"validation.best_mode must be 'max' or 'min', got {self.best_mode!r}")
        if self.best_metric is not None and not self.best_metric.startswith(self.metric_prefixes):
            raise ValueError(
                f"validation.best_metric must name a validation scalar ({', '.join(self.metric_prefixes)}*), "
                f"got {self.best_metric!r}"
            )
        if self.best_metric is not None:
            self.check_best_metric(self.best_metric)

    def check_best_metric(self, name: str) -> None:
        """Reject a name :func:`validation_metrics` never logs, before the first validation runs (A73)."""
        parts = name.split("/")
        if len(parts) == 2 and parts[1] in HEADLINE_METRICS:
            return
        if len(parts) == 3 and parts[1] in ("reward", "status") and parts[2]:
            return
        raise ValueError(
            f"validation.best_metric={name!r} is never logged; use val/<{'|'.join(HEADLINE_METRICS)}>, "
            "val/reward/<data_source> or val/status/<status>"
        )


#: The ``val/<name>`` scalars every validation logs (:func:`validation_metrics` and :func:`report_validation`).
HEADLINE_METRICS = ("reward", "core", "success_rate", "turns_mean", "episodes", "unscored", "steps_done")


def validation_due(steps_done: int, settings: ValidationSettings, is_last: bool = False) -> bool:
    """Whether to validate after ``steps_done`` training steps (``0``: before training)."""
    if steps_done == 0:
        return settings.val_before_train
    every = settings.val_every_n_steps
    return bool(every and steps_done % every == 0) or (is_last and settings.val_at_end)


@dataclass
class ValidationEpisode:
    """What validation needs of one episode."""

    data_source: str
    reward: float
    success: bool
    turns: int
    status: str
    scored: bool = True


def summarize(records: list[ValidationEpisode]) -> dict[str, Any]:
    """Sums over this rank's episodes (mergeable across ranks with :func:`merge_summaries`).

    Unscored episodes (an infrastructure failure: ``scored=False``) are counted under ``statuses`` and
    ``unscored`` only, never as a zero reward (as agent evaluation leaves them out; docs/decisions.md A76).
    """
    statuses = Counter(r.status for r in records)
    records = [r for r in records if r.scored]
    by_source: dict[str, list[float]] = {}
    for r in records:
        acc = by_source.setdefault(r.data_source, [0.0, 0.0])
        acc[0] += r.reward
        acc[1] += 1
    return {
        "episodes": len(records),
        "reward_sum": sum(r.reward for r in records),
        "successes": sum(bool(r.success) for r in records),
        "turns_sum": sum(r.turns for r in records),
        "statuses": dict(statuses),
        "by_source": by_source,
        "unscored": sum(statuses.values()) - len(records),
    }


def merge_summaries(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One summary of several ranks' summaries."""
    out: dict[str, Any] = {
        "episodes": 0,
        "unscored": 0,
        "reward_sum": 0.0,
        "successes": 0,
        "turns_sum": 0,
        "statuses": Counter(),
        "by_source": {},
    }
    for part in parts:
        for key in ("episodes", "reward_sum", "successes", "turns_sum", "unscored"):
            out[key] += part.get(key, 0)
        out["statuses"].update(part["statuses"])
        for source, (total, count) in part["by_source"].items():
            acc = out["by_source"].setdefault(source, [0.0, 0.0])
            acc[0] += total
            acc[1] += count
    out["statuses"] = dict(out["statuses"])
    return out


def validation_metrics(summary: dict[str, Any], prefix: str = "val") -> dict[str, float]:
    """``val/reward`` (mean episode reward), ``val/core`` (mean over data sources of their mean reward),
    ``val/success_rate``, ``val/turns_mean``, ``val/episodes`` (scored), ``val/unscored``, ``val/status/<status>``
    (counts, unscored included) and ``val/reward/<data_source>``; over scored episodes only, NaN when none."""
    n = summary["episodes"]
    means = {source: total / count for source, (total, count) in sorted(summary["by_source"].items()) if count}
    nan = float("nan")  # no scored episode: nothing to report, and no best checkpoint is kept on it
    metrics = {
        f"{prefix}/reward": summary["reward_sum"] / n if n else nan,
        f"{prefix}/core": sum(means.values()) / len(means) if means else nan,
        f"{prefix}/success_rate": summary["successes"] / n if n else nan,
        f"{prefix}/turns_mean": summary["turns_sum"] / n if n else nan,
        f"{prefix}/episodes": float(n),
        f"{prefix}/unscored": float(summary.get("unscored", 0)),
    }
    for status, count in summary["statuses"].items():
        metrics[f"{prefix}/status/{status}"] = float(count)
    for source, mean in means.items():
        metrics[f"{prefix}/reward/{source}"] = mean
    return metrics


def gather_summaries(summary: dict[str, Any]) -> dict[str, Any]:
    """Merge every rank's summary (a collective: every rank must call it)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return merge_summaries([summary])
    parts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, summary)
    return merge_summaries(parts)


@dataclass
class BestCheckpoint:
    """Keep one checkpoint: the one with the best ``metric`` so far (``best-step=N.ckpt`` + ``best.json``).

    ``update`` must be called on every rank (saving a sharded checkpoint is a collective).
    """

    metric: str
    mode: Literal["max", "min"] = "max"
    best: float | None = None
    path: str | None = None
    history: list[dict[str, float]] = field(default_factory=list)

    def improves(self, value: float) -> bool:
        if math.isnan(value):
            return False
        if self.best is None:
            return True
        return value > self.best if self.mode == "max" else value < self.best

    def update(self, trainer: Any, metrics: dict[str, float], dirpath: str | Path) -> str | None:
        """Save when ``metrics[self.metric]`` improves; returns the new path (or ``None``)."""
        if self.metric not in metrics:
            raise KeyError(
                f"best-checkpoint metric {self.metric!r} is not among the validation metrics "
                f"{sorted(metrics)}; set validation.best_metric to one of them"
            )
        value = float(metrics[self.metric])
        step = int(trainer.global_step)
        self.history.append({"step": step, self.metric: value})
        if not self.improves(value):
            return None
        old = self.path
        path = str(Path(dirpath) / f"best-step={step}.ckpt")
        self.best, self.path = value, path  # before saving, so that the checkpoint knows it is the best
        trainer.save_checkpoint(path)
        if old is not None and old != path and Path(old).parent == Path(dirpath):  # never another run's
            trainer.strategy.remove_checkpoint(old)
        if trainer.is_global_zero:
            record = {"metric": self.metric, "mode": self.mode, "best": value, "step": step, "path": path}
            (Path(dirpath) / "best.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        return path

    def state_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "mode": self.mode, "best": self.best, "path": self.path, "history": self.history}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("metric") == self.metric and state.get("mode") == self.mode:
            self.best, self.path = state.get("best"), state.get("path")
            self.history = list(state.get("history", []))


def shard_rows(rows: list[Any], settings: ValidationSettings, rank: int, world_size: int) -> list[Any]:
    """This rank's val prompts: the first ``max_prompts``, dealt round-robin over the ranks."""
    rows = rows[: settings.max_prompts] if settings.max_prompts else rows
    return rows[rank::world_size]


def is_last_step(trainer: Any, batch_idx: int) -> bool:
    """Whether the training batch ending now is the run's last (``max_steps`` or the last epoch's end)."""
    if 0 < trainer.max_steps <= trainer.global_step:
        return True
    return (
        trainer.max_epochs is not None
        and trainer.current_epoch + 1 >= trainer.max_epochs
        and batch_idx + 1 >= trainer.num_training_batches
    )


def report_validation(
    trainer: Any,
    pl_module: Any,
    records: list[ValidationEpisode],
    steps_done: int,
    best: BestCheckpoint | None,
    extra: dict[str, float] | None = None,
) -> dict[str, float]:
    """Merge every rank's records (a collective), log ``val/*`` on this step, and update the best
    checkpoint under ``<log_dir>/checkpoints``. Call from a training-batch hook on every rank."""
    metrics = validation_metrics(gather_summaries(summarize(records)))
    metrics["val/steps_done"] = float(steps_done)
    metrics.update(extra or {})
    pl_module.log_dict(metrics, on_step=True, on_epoch=False, batch_size=1)
    if best is not None:
        dirpath = trainer.strategy.broadcast(str(Path(trainer.log_dir or ".") / "checkpoints"))
        best.update(trainer, metrics, dirpath)
    return metrics
