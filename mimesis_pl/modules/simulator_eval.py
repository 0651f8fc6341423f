"""Simulator-fidelity evaluation as a LightningModule for ``mimesis-pl test`` (SOUL, RealUserSim, tau-USI, Turing).

The suite (a ``class_path`` object, :class:`~mimesis_pl.eval.simulator.base.FidelitySuite`) does the
work; this module gives it an event loop, the resumable item cache (``<suite>_items.jsonl``), the
retry policy, and writes what it reports: ``results.json``, ``results.md`` (the latest run, naming its
settings), ``results-<settings hash>.json``/``.md`` (one per settings, never overwritten by a run with other
settings: docs/decisions.md E12), ``charts/<suite>.png`` and TensorBoard scalars (``<suite>/…``,
``items/run``, ``items/reused``).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import lightning.pytorch as pl

from ..eval.agent_backend import RetrySettings
from ..eval.simulator.base import FidelitySuite, SuiteContext
from ..eval.simulator.suite import suite_settings, write_suite_files
from ..eval.trials import TrialCache
from ..rollout.event_loop import shutdown_loop

log = logging.getLogger(__name__)


class SimulatorEvalModule(pl.LightningModule):
    """Runs one simulator-fidelity suite over the items of its DataModule; resumable.

    Args:
        suite: the suite and its models (``class_path`` + ``init_args``).
        max_concurrency: items in flight at once.
        retry: retries of an item that failed for infrastructure reasons (then stored unscored).
        out_dir: where the report files go (default: the logger's run folder).
        cache_dir: folder of ``<suite>_items.jsonl`` (default: ``out_dir``, else the logger's root);
            rerunning with the same cache resumes a killed run and redoes no finished item.
    """

    def __init__(
        self,
        suite: FidelitySuite,
        max_concurrency: int = 8,
        retry: RetrySettings | None = None,
        out_dir: str | None = None,
        cache_dir: str | None = None,
    ) -> None:
        super().__init__()
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.suite, self.max_concurrency, self.retry = suite, max_concurrency, retry or RetrySettings()
        self.out_dir, self.cache_dir = out_dir, cache_dir
        self.ctx: SuiteContext | None = None
        self.files: tuple[Path, ...] = ()
        self._loop: asyncio.AbstractEventLoop | None = None

    def on_test_start(self) -> None:
        if self.trainer.world_size > 1:
            raise RuntimeError(f"SimulatorEvalModule runs on one process; got world size {self.trainer.world_size}")
        out = Path(self.out_dir or self.trainer.log_dir or f"runs/eval_{self.suite.name}")
        out.mkdir(parents=True, exist_ok=True)
        if self.cache_dir or self.out_dir:
            cache_dir = Path(self.cache_dir or out)
        else:  # the per-version log folder changes every run; the cache must outlive it
            cache_dir = Path(getattr(self.trainer.logger, "root_dir", None) or out)
        self._loop = asyncio.new_event_loop()
        self.suite.start()
        self.ctx = SuiteContext(
            cache=TrialCache(cache_dir / f"{self.suite.name}_items.jsonl"),
            retry=self.retry.policy(),
            max_concurrency=self.max_concurrency,
            out_dir=out,
        )
        log.info("%s suite: cache %s", self.suite.name, self.ctx.cache.path)

    def test_step(self, batch: list[Any], batch_idx: int) -> None:
        assert self._loop is not None and self.ctx is not None
        self._loop.run_until_complete(self.suite.run_batch(batch, self.ctx))

    def on_test_epoch_end(self) -> None:
        assert self.ctx is not None
        report = self.suite.report(self.ctx)  # raises when nothing could be scored: no NaN summary
        json_path, md_path = write_suite_files(
            self.ctx.out_dir, report.results, report.markdown, suite_settings(self.suite)
        )
        chart = self.suite.chart(report, self.ctx.out_dir / "charts" / f"{self.suite.name}.png")
        self.files = (json_path, md_path, *([chart] if chart else []))
        values = dict(report.scalars)
        values.update({"items/run": float(self.ctx.ran), "items/reused": float(self.ctx.reused)})
        self.log_dict(values)
        print(f"\n{report.markdown}\n(items run {self.ctx.ran}, reused from cache {self.ctx.reused}; report {md_path})")

    def teardown(self, stage: str) -> None:
        if self._loop is not None:
            self._loop.run_until_complete(self.suite.aclose())
            shutdown_loop(self._loop)
            self._loop = None
