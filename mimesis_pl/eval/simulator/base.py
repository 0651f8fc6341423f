"""The suite interface the evaluation module drives (``mimesis-pl test``), and what a suite hands back."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mimesis_pl.eval.failures import RetryPolicy
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
