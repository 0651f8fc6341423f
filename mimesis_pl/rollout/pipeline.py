"""Rollouts ahead of the update: a background event loop that runs later batches' episodes (``rollout.max_staleness``).

With ``max_staleness = k >= 1`` the rollout stage submits the episodes of batch N + k right after it has waited for
batch N's and synced the engine, so they run on this loop's thread while the Lightning thread updates on batch N.
What a job runs, its position in the data order and the RL step whose weights the engine held when it started are
recorded; the Lightning thread waits for each job in step order (:meth:`RolloutPipeline.take`), so batch N is trained
at step N whatever k is. Nothing here runs a collective, touches checkpointed state or imports a stage.

The positions in flight after step N are N + 1 … N + k, a function of the data position Lightning checkpoints, so a
resume regenerates them (no prompt lost or trained twice).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal

THREAD_NAME = "mimesis-rollout"


#: What a resume does with the batches a checkpoint had in flight: roll them out again under the loaded weights, or
#: train the rollouts the checkpoint kept (bit-identical to the run that was not stopped; docs/decisions.md A101).
ResumeInflight = Literal["regenerate", "restore"]


def check_pipeline_settings(max_staleness: int, wait_timeout_s: float | None) -> None:
    """The range checks of ``rollout.max_staleness`` and ``rollout.wait_timeout_s`` (agent and simulator RL)."""
    if max_staleness < 0:
        raise ValueError(f"model.init_args.rollout.max_staleness must be >= 0, got {max_staleness}")
    if wait_timeout_s is not None and not wait_timeout_s > 0:
        raise ValueError(f"model.init_args.rollout.wait_timeout_s must be > 0 or null, got {wait_timeout_s}")


@dataclass(frozen=True, order=True)
class BatchPos:
    """A training batch's place in the data order: its epoch and its index within the epoch."""

    epoch: int
    index: int

    def as_list(self) -> list[int]:
        return [self.epoch, self.index]


@dataclass
class Job:
    """The background work of one batch: its rows, the RL step whose weights it started on, and its future."""

    pos: BatchPos
    rows: list[dict[str, Any]]
    version: int
    future: concurrent.futures.Future
    submitted: float = field(default_factory=time.perf_counter)


class RolloutPipeline:
    """An event loop on its own thread and the jobs running on it, in submission order."""

    def __init__(self, wait_timeout_s: float | None = None) -> None:
        self.wait_timeout_s = wait_timeout_s
        self.loop = asyncio.new_event_loop()
        self.jobs: dict[BatchPos, Job] = {}
        self._thread = threading.Thread(target=self._serve, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` on the loop and wait for its result (validation's episodes share the loop's engine)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def submit(self, pos: BatchPos, rows: list[dict[str, Any]], version: int, coro: Coroutine[Any, Any, Any]) -> Job:
        """Start ``coro`` (the batch's episodes) on the loop; refuses a position already in flight."""
        if pos in self.jobs:
            coro.close()
            raise RuntimeError(f"rollout pipeline: batch {pos} is already in flight")
        job = Job(pos, rows, version, asyncio.run_coroutine_threadsafe(coro, self.loop))
        self.jobs[pos] = job
        return job

    def restore(self, pos: BatchPos, rows: list[dict[str, Any]], version: int, result: Any) -> Job:
        """Put a finished job back (a resume that restores the checkpoint's rollouts instead of regenerating them)."""
        if pos in self.jobs:
            raise RuntimeError(f"rollout pipeline: batch {pos} is already in flight")
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_result(result)
        job = Job(pos, rows, version, future)
        self.jobs[pos] = job
        return job

    def finished(self) -> list[tuple[BatchPos, Job, Any]]:
        """Every job in flight, waited for, with its result, in order (what a restoring checkpoint keeps)."""
        self.drain()
        return [(pos, self.jobs[pos], self.jobs[pos].future.result()) for pos in self.positions()]

    def positions(self) -> list[BatchPos]:
        """The positions in flight (or done and not yet taken), in order."""
        return sorted(self.jobs)

    def take(self, pos: BatchPos, rows: list[dict[str, Any]]) -> tuple[Job, Any]:
        """Wait for the job of ``pos`` and remove it: ``(job, result)``; its rows must be Lightning's batch."""
        job = self.jobs.pop(pos, None)
        if job is None:
            raise RuntimeError(f"rollout pipeline: no job for batch {pos} (in flight: {self.positions()})")
        if job.rows != rows:
            raise RuntimeError(
                f"rollout pipeline: the rollouts started ahead for batch {pos} were of other prompts than "
                "Lightning's batch there (the data module's lookahead does not match its loader)"
            )
        return job, self._wait(job)

    def drain(self) -> None:
        """Wait for every job in flight (results kept for :meth:`take`); errors surface here."""
        for pos in self.positions():
            self._wait(self.jobs[pos])

    def _wait(self, job: Job) -> Any:
        try:
            return job.future.result(timeout=self.wait_timeout_s)
        except concurrent.futures.TimeoutError:
            running = sum(1 for j in self.jobs.values() if not j.future.done())
            raise RuntimeError(
                f"rollout pipeline: batch {job.pos} not done after rollout.wait_timeout_s={self.wait_timeout_s} s "
                f"({running} other job(s) still running)"
            ) from None

    def cancel(self) -> None:
        """Cancel every job in flight (the loop keeps running)."""
        for job in self.jobs.values():
            job.future.cancel()
        self.jobs.clear()

    def stop(self) -> None:
        """Cancel the jobs, stop the loop and its thread, then close the loop (what still runs is cancelled)."""
        self.cancel()
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        # a generation running in the engine's worker thread finishes (one micro-batch) before the loop closes
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        self.loop.close()
