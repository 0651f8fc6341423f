"""``DecisionProbe``: the exact probe of :mod:`mimesis_pl.eval.probe` on the policy, before training and after updates.

    trainer:
      callbacks:
        - class_path: mimesis_pl.modules.decision_probe.DecisionProbe
          init_args: {contexts: data/cue/probe.jsonl, every_n_steps: 1}

Works with the agent RL modules (``AgentGRPO``, ``AgentCSD``): the contexts are rendered as the rollouts render
them (the module's tokenizer and the rollout's ``enable_thinking``) and scored on the module's model as it
trains (a LoRA policy: with its adapters). Not re-exported by ``mimesis_pl.modules`` (a callback, named by its
path).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl

from ..chat.render import ChatRenderer
from ..eval.probe import ProbeResult, probe_decisions, read_probe_contexts

log = logging.getLogger(__name__)


class DecisionProbe(pl.Callback):
    """P(correct decision) from logits on fixed contexts, at step 0 and after every ``every_n_steps`` updates.

    Each probe logs ``<name>/p_correct``, ``<name>/p_correct_norm`` (and ``time/<name>_s``) against the
    optimiser-update count (``trainer.global_step``) and appends one JSON line (step, means, n, each row's p_correct) to
    ``<run folder>/<name>.jsonl``. A resumed run keeps the lines of steps up to the one it resumes from (and
    writes none of them again) and drops later ones, which belong to updates the resumed run redoes.

    Args:
        contexts: a probe-contexts JSONL file (:func:`~mimesis_pl.eval.probe.read_probe_contexts`).
        every_n_steps: probe after every this many optimiser updates.
        name: the metrics' prefix and the file's stem.
        batch_size: sequences (context × candidate) per forward.
    """

    def __init__(self, contexts: str, every_n_steps: int = 1, name: str = "probe", batch_size: int = 8) -> None:
        if every_n_steps < 1:
            raise ValueError(f"DecisionProbe: every_n_steps must be >= 1, got {every_n_steps}")
        if batch_size < 1:
            raise ValueError(f"DecisionProbe: batch_size must be >= 1, got {batch_size}")
        if not name or "/" in name:
            raise ValueError(f"DecisionProbe: name must be a non-empty word without '/', got {name!r}")
        self.contexts = contexts
        self.every_n_steps = every_n_steps
        self.name = name
        self.batch_size = batch_size
        self.rows = read_probe_contexts(contexts)  # a bad file fails when the config is read, not after a step
        self.path: Path | None = None
        self._last: int | None = None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        step = int(trainer.global_step)
        self.path = Path(trainer.log_dir or trainer.default_root_dir) / f"{self.name}.jsonl"
        fresh = False
        if trainer.is_global_zero:
            keep_lines_up_to(self.path, step)
            fresh = step == 0 and 0 not in steps_written(self.path)
        self._last = step
        if trainer.strategy.broadcast(fresh):  # every rank probes, or none (a sharded model needs them all)
            self.probe(trainer, pl_module)

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        step = int(trainer.global_step)
        if self._last is not None and step // self.every_n_steps > self._last // self.every_n_steps:
            self.probe(trainer, pl_module)
        self._last = step

    def probe(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> ProbeResult:
        """Probe now (every rank: a sharded model needs all of them), log and write on rank 0."""
        step = int(trainer.global_step)
        started = time.perf_counter()
        result = probe_decisions(pl_module.model, policy_renderer(pl_module), self.rows, batch_size=self.batch_size)
        if trainer.is_global_zero:
            metrics = {
                f"{self.name}/p_correct": result.p_correct,
                f"{self.name}/p_correct_norm": result.p_correct_norm,
                f"time/{self.name}_s": time.perf_counter() - started,
            }
            for logger in trainer.loggers:
                logger.log_metrics(metrics, step=step)
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(probe_line(step, result)) + "\n")
        return result


def probe_line(step: int, result: ProbeResult) -> dict[str, Any]:
    """One probe's JSON line: the step, the means, n and each row's p_correct by id."""
    return {"step": step, **result.summary(), "p_correct_by_row": {r.id: r.p_correct for r in result.rows}}


def policy_renderer(pl_module: pl.LightningModule) -> ChatRenderer:
    """The renderer the module's rollouts use (its tokenizer, the rollout's template kwargs), without tools."""
    settings = getattr(getattr(pl_module, "rollout_stage", None), "settings", None)
    template_kwargs = getattr(settings, "template_kwargs", None)
    tokenizer = getattr(pl_module, "tokenizer", None)
    if template_kwargs is None or tokenizer is None:
        raise TypeError(
            f"DecisionProbe needs an agent RL module (AgentGRPO, AgentCSD) with a tokenizer and rollout settings; "
            f"got {type(pl_module).__name__}"
        )
    return ChatRenderer(tokenizer, **template_kwargs)


def steps_written(path: Path | None) -> set[int]:
    """The steps of the probe lines in ``path`` (none when it does not exist)."""
    if path is None or not path.is_file():
        return set()
    return {json.loads(line)["step"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def keep_lines_up_to(path: Path, step: int) -> None:
    """Drop the lines of ``path`` for steps after ``step`` (a resumed run redoes those updates), saying how many."""
    if not path.is_file():
        return
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = [line for line in lines if json.loads(line)["step"] <= step]
    if len(kept) < len(lines):
        log.warning(
            "%s: dropped %d probe line(s) after step %d: the run resumes from step %d and probes those steps again",
            path,
            len(lines) - len(kept),
            step,
            step,
        )
        path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
