"""The suite interface the evaluation module drives (``mimesis-pl test``), what a suite hands back, and the
base of every suite's DataModule (its items, loaded and checked in ``setup``, in file order)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from torch.utils.data import DataLoader

from mimesis_pl.eval.failures import RetryPolicy
from mimesis_pl.eval.host_batches import HostBatches, as_list
from mimesis_pl.eval.trials import TrialCache


@dataclass
class SuiteContext:
    """Where a suite keeps its items (``cache``) and how it runs them."""

    cache: TrialCache
    retry: RetryPolicy
    max_concurrency: int
    out_dir: Path
    ran: int = 0
    reused: int = 0

    def count(self, run: Any) -> None:
        self.ran += run.ran
        self.reused += run.reused


@dataclass(frozen=True)
class SuiteReport:
    """A suite's results: ``results`` (→ results.json), ``markdown`` (→ results.md), TensorBoard ``scalars``."""

    results: dict[str, Any]
    markdown: str
    scalars: dict[str, float] = field(default_factory=dict)


class FidelitySuite(ABC):
    """A simulator-fidelity suite: items come from its DataModule in batches; models are built on start."""

    name: ClassVar[str]
    version: ClassVar[str]

    @abstractmethod
    def start(self) -> None:
        """Build the models and read the reference files (before the first batch)."""

    @abstractmethod
    async def run_batch(self, batch: list[Any], ctx: SuiteContext) -> None:
        """Run (or reuse from ``ctx.cache``) every item of ``batch``; count with ``ctx.count``."""

    @abstractmethod
    def report(self, ctx: SuiteContext) -> SuiteReport:
        """Aggregate every item seen; raise when nothing could be scored (never a NaN summary)."""

    @abstractmethod
    def chart(self, report: SuiteReport, path: Path) -> Path | None:
        """Write the suite's PNG (None when matplotlib is missing)."""

    async def aclose(self) -> None:
        for model in getattr(self, "_models", {}).values():
            await model.aclose()


class ItemDataModule(HostBatches):
    """A suite's items from ``files`` (its ``load``), the first ``limit`` kept, ``batch_size`` per ``test_step``."""

    def __init__(self, files: list[str], limit: int | None, batch_size: int) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be >= 1 or null, got {limit}")
        self.files, self.limit, self.batch_size = list(files), limit, batch_size
        self.items: list[Any] = []

    def load(self) -> list[Any]:
        raise NotImplementedError

    def setup(self, stage: str | None = None) -> None:
        if not self.items:
            self.items = self.load()[: self.limit]

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.items, batch_size=self.batch_size, shuffle=False, collate_fn=as_list)
