"""An asyncio micro-batching queue in front of a blocking batch generator.

The multi-turn loop runs one coroutine per trajectory and each calls ``engine.generate`` for one
sequence. Engines whose backend takes a whole batch at once (HF ``generate``, the offline SGLang
``Engine.generate``) put this queue in front: calls that arrive while a batch is running, or within
``batch_wait_ms`` of the first call after an idle period, are run together as one batch in a worker
thread (``asyncio.to_thread``), so the event loop keeps serving the environment, the user simulator
and the shim while the model generates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .base import GenerationResult, SamplingParams

BatchFn = Callable[[Sequence[tuple[list[int], SamplingParams]]], list[GenerationResult]]


@dataclass
class _Pending:
    prompt_ids: list[int]
    params: SamplingParams
    future: asyncio.Future


class MicroBatcher:
    """Collect concurrent single-sequence requests into batches for ``run_batch``.

    Args:
        run_batch: blocking function; takes ``[(prompt_ids, params), ...]`` and returns one
            :class:`GenerationResult` per request, in order. It runs in a worker thread, one batch
            at a time.
        max_batch_size: most requests in one batch; the rest wait for the next batch.
        batch_wait_ms: after an idle period, how long the first request waits for company.
            Requests that queued up while a batch ran do not wait again.

    The queue belongs to the event loop that uses it; when a new loop starts using it (each
    ``asyncio.run`` makes one) it starts a fresh worker there. Two loops using one batcher at the
    same time is not supported. ``batches_run`` and ``requests_run`` count completed work.
    """

    def __init__(self, run_batch: BatchFn, max_batch_size: int = 64, batch_wait_ms: float = 2.0) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if batch_wait_ms < 0:
            raise ValueError(f"batch_wait_ms must be >= 0, got {batch_wait_ms}")
        self._run_batch = run_batch
        self.max_batch_size = max_batch_size
        self.batch_wait_s = batch_wait_ms / 1000.0
        self.batches_run = 0
        self.requests_run = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[_Pending] = []
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None
        self._closed = False

    async def submit(self, prompt_ids: list[int], params: SamplingParams) -> GenerationResult:
        if self._closed:
            raise RuntimeError("this engine is closed; build a new one")
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._worker is None or self._worker.done():
            self._start(loop)
        pending = _Pending(prompt_ids, params, loop.create_future())
        self._pending.append(pending)
        self._wakeup.set()
        return await pending.future

    def close(self) -> None:
        self._closed = True
        for pending in self._pending:
            if not pending.future.done():
                pending.future.cancel()
        self._pending.clear()
        if self._worker is not None and not self._worker.done():
            # cancel() must run on the worker's own loop; the loop may already be gone.
            try:
                self._loop.call_soon_threadsafe(self._worker.cancel)
            except RuntimeError:
                pass

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        # Requests queued on a previous loop can never be served (their loop has stopped).
        self._pending = [p for p in self._pending if p.future.get_loop() is loop]
        self._loop = loop
        self._wakeup = asyncio.Event()
        self._worker = loop.create_task(self._drain(), name="mimesis-micro-batcher")

    async def _drain(self) -> None:
        while True:
            was_idle = not self._wakeup.is_set()
            await self._wakeup.wait()
            if was_idle and self.batch_wait_s > 0:
                await asyncio.sleep(self.batch_wait_s)
            batch = self._pending[: self.max_batch_size]
            del self._pending[: self.max_batch_size]
            if not self._pending:
                self._wakeup.clear()
            batch = [p for p in batch if not p.future.done()]  # callers that were cancelled
            if not batch:
                continue
            try:
                results = await asyncio.to_thread(self._run_batch, [(p.prompt_ids, p.params) for p in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"engine returned {len(results)} results for a batch of {len(batch)}")
            except asyncio.CancelledError:
                for p in batch:
                    p.future.cancel()
                raise
            except Exception as error:  # every caller of the batch sees the failure
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(error)
                continue
            self.batches_run += 1
            self.requests_run += len(batch)
            for p, result in zip(batch, results):
                if not p.future.done():
                    p.future.set_result(result)
