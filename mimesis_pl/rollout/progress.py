"""What an RL run shows while it runs: the share of GRPO groups that carry a learning signal, and one
terminal line per optimiser step (step, reward, success, notes, step time, ETA)."""

from __future__ import annotations

import math
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, TextIO

import lightning.pytorch as pl

from .trajectory import Trajectory


def groups_with_signal(trajectories: Sequence[Trajectory], tol: float = 1e-9) -> float:
    """Share of groups (by ``group_id``) whose trained trajectories' scores are not all equal.

    A group whose scores are all equal has every GRPO advantage 0: its policy-gradient term vanishes.
    Failed trajectories (masked out of the loss) and groups with fewer than two scored members do not
    count as signal. Returns 0.0 for an empty batch.
    """
    scores: dict[str, list[float]] = defaultdict(list)
    order: list[str] = []
    for t in trajectories:
        if t.group_id not in scores:
            order.append(t.group_id)
        if not t.failed and t.num_turns > 0:
            scores[t.group_id].append(float(t.reward))
    if not order:
        return 0.0
    with_signal = sum(1 for g in order if len(scores[g]) > 1 and max(scores[g]) - min(scores[g]) > tol)
    return with_signal / len(order)


def format_eta(seconds: float) -> str:
    """``1h02m``, ``3m05s`` or ``42s``; ``?`` when unknown."""
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def progress_line(step: int, max_steps: int, metrics: dict[str, float], step_s: float, eta_s: float) -> str:
    """One line per step.

    E.g. ``step   3/24  reward 0.417  success 0.125  signal 0.50  notes 6  3.1s/step  ETA 1m05s``.
    """
    width = len(str(max_steps)) if max_steps > 0 else 1
    total = str(max_steps) if max_steps > 0 else "?"
    parts = [f"step {step:>{width}}/{total}"]
    for key, label, fmt in (
        ("rollout/episode_reward_mean", "reward", "{:.3f}"),
        ("rollout/success_rate", "success", "{:.3f}"),
        ("rollout/groups_with_signal", "signal", "{:.2f}"),
        ("rollout/tool_errors_per_episode", "tool_err", "{:.2f}"),
        ("coach/notes", "notes", "{:.0f}"),
        ("train/csd/gate_mean", "gate", "{:.2f}"),
    ):
        if key in metrics:
            parts.append(f"{label} {fmt.format(metrics[key])}")
    parts.append(f"{step_s:.1f}s/step")
    parts.append(f"ETA {format_eta(eta_s)}")
    return "  ".join(parts)


class RLProgressPrinter(pl.Callback):
    """Prints :func:`progress_line` after every optimiser step (to stderr by default).

    Use it with ``enable_progress_bar: false``; its values are the step's logged metrics.
    """

    def __init__(self, every_n_steps: int = 1, stream: TextIO | None = None) -> None:
        if every_n_steps < 1:
            raise ValueError(f"every_n_steps must be >= 1, got {every_n_steps}")
        self.every_n_steps = every_n_steps
        self.stream = stream
        self._start: float | None = None
        self._last: float | None = None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._start = self._last = time.perf_counter()

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if not trainer.is_global_zero:
            return
        now = time.perf_counter()
        step = int(trainer.global_step) if trainer.global_step else batch_idx + 1
        step_s = now - (self._last if self._last is not None else now)
        self._last = now
        if step % self.every_n_steps:
            return
        max_steps = int(trainer.max_steps) if trainer.max_steps and trainer.max_steps > 0 else -1
        done = max(1, step)
        mean_s = (now - self._start) / done if self._start is not None else step_s
        eta = mean_s * (max_steps - step) if max_steps > 0 else float("nan")
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if getattr(v, "numel", lambda: 1)() == 1}
        print(progress_line(step, max_steps, metrics, step_s, eta), file=self.stream or sys.stderr, flush=True)
