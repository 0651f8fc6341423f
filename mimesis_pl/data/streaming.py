"""Streaming SFT batches: conversations are read and rendered lazily, one bounded window at a time.

Used by :class:`~mimesis_pl.data.chat_sft.ChatSFTDataModule` with ``streaming: true``. Memory holds
one window of rendered samples per data-loader worker, whatever the size of the data set; start-up
renders nothing.

Order and sharding. The source's conversations are numbered ``k = 0, 1, …`` in source order (for a
parquet mixture that order is already the seeded shuffle of :func:`~.mixture.mixture_index`, with its
exact per-file counts). Conversation ``k`` belongs to shard ``k mod (world_size × num_workers)``, so
every conversation is trained exactly once per (internal) epoch on exactly one rank and worker.

Bucketing without rendering everything: each shard cuts its conversations into windows of
``shuffle_window`` conversations (the cut points shift by a seeded offset every epoch, so windows mix
differently each time), renders one window, sorts it by length, packs batches of ``batch_size``
(capped by ``max_tokens``) and yields them in a seeded shuffled order. Conversations further apart
than a window never share a batch; padding stays as low as the window is long.

The stream is endless (epoch after epoch, each re-reading the source), so every rank can always take
the next step; the run's length is ``trainer.max_steps``. It is resumable: the checkpoint stores how
many batches were consumed, and a resumed stream re-reads and re-renders its shard up to that point
(time, not memory) and continues with the next batch — data-loader workers take batches round-robin,
so worker ``w`` skips the consumed batches ``w, w + W, …``.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from torch.utils.data import IterableDataset, get_worker_info

log = logging.getLogger(__name__)


def pack_by_length(indices: list[int], lengths: list[int], batch_size: int, max_tokens: int | None) -> list[list[int]]:
    """Cut ``indices`` (already in the wanted order) into batches of at most ``batch_size`` sequences and,
    when ``max_tokens`` is set, at most ``max_tokens`` padded tokens (a longer sequence is a batch alone)."""
    out: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i in indices:
        width = max(longest, lengths[i])
        if cur and (len(cur) >= batch_size or (max_tokens and width * (len(cur) + 1) > max_tokens)):
            out.append(cur)
            cur, width = [], lengths[i]
        cur.append(i)
        longest = width
    if cur:
        out.append(cur)
    return out


def window_offset(seed: int, epoch: int, window: int) -> int:
    """How far the window cut points shift in ``epoch`` (0 in epoch 0)."""
    return 0 if epoch == 0 or window <= 1 else random.Random(seed * 7_919 + epoch).randrange(window)


def worker_skip(consumed_batches: int, worker: int, num_workers: int) -> int:
    """Batches worker ``worker`` must skip when ``consumed_batches`` were taken round-robin from ``num_workers``."""
    return len(range(worker, consumed_batches, num_workers))


class StreamingSFTBatches(IterableDataset):
    """Endless stream of collated, length-bucketed batches of one rank (sharded further by worker).

    Args:
        source: returns a fresh iterator over the conversations (and :class:`~.chat_sft.BadSample`
            markers) in source order; called once per epoch and worker.
        prepare: conversation → training sample dict (``input_ids``, ``loss_mask``, ``sample_id``), or
            ``None`` when it is skipped (it counts the skip into the ``Counter`` it is given).
        keep: whether a conversation belongs to this stream (the train split).
        collate: list of samples → batch.
    """

    def __init__(
        self,
        source: Callable[[], Iterator[Any]],
        prepare: Callable[[Any, Counter], dict[str, Any] | None],
        keep: Callable[[Any], bool],
        collate: Callable[[list[dict[str, Any]]], dict[str, Any]],
        batch_size: int,
        max_tokens: int | None = None,
        shuffle_window: int = 4096,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        if shuffle_window < 1:
            raise ValueError(f"shuffle_window must be >= 1, got {shuffle_window}")
        self.source, self.prepare, self.keep, self.collate = source, prepare, keep, collate
        self.batch_size, self.max_tokens = batch_size, max_tokens
        self.shuffle_window, self.seed = shuffle_window, seed
        self.rank, self.world_size = rank, world_size
        self.epoch = 0
        self.consumed_batches = 0
        self.stats: Counter = Counter()

    # -- resumable state (the DataModule's ResumableSamplerMixin calls these) -------------------

    def set_epoch(self, epoch: int) -> None:
        """The internal epoch the stream starts from (Lightning's epoch never ends on an endless stream)."""
        if epoch != self.epoch:
            self.consumed_batches = 0
        self.epoch = epoch

    def state_dict(self, consumed_batches: int) -> dict[str, Any]:
        return {"seed": self.seed, "epoch": self.epoch, "consumed_batches": consumed_batches, "streaming": True}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("seed", self.seed) != self.seed:
            raise ValueError(f"checkpoint was made with data seed {state['seed']}, this run uses {self.seed}")
        self.epoch = int(state["epoch"])
        self.consumed_batches = int(state["consumed_batches"])

    # -- iteration --------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        shard, num_shards = self.rank * num_workers + worker, self.world_size * num_workers
        skip = worker_skip(self.consumed_batches, worker, num_workers)
        epoch = self.epoch
        while True:
            produced = False
            for batch in self.epoch_batches(epoch, shard, num_shards):
                produced = True
                if skip:
                    skip -= 1
                    continue
                yield self.collate(batch)
            if not produced:
                raise ValueError(
                    f"streaming SFT data: shard {shard} of {num_shards} (rank {self.rank}, worker {worker}) has no "
                    f"training samples ({dict(self.stats)}); use fewer ranks/workers or check the data"
                )
            epoch += 1

    def epoch_batches(self, epoch: int, shard: int, num_shards: int) -> Iterator[list[dict[str, Any]]]:
        """The batches (lists of samples) of one shard in one epoch, in order (deterministic)."""
        offset = window_offset(self.seed, epoch, self.shuffle_window)
        window: list[dict[str, Any]] = []
        position = 0  # this shard's conversations seen so far
        number = 0
        for k, conv in enumerate(self.source()):
            if k % num_shards != shard:
                continue
            sample = self.prepare(conv, self.stats) if self.keep(conv) else None
            position += 1
            if sample is not None:
                window.append(sample)
            if position >= offset and (position - offset) % self.shuffle_window == 0 and window:
                yield from self._window(window, epoch, shard, number)
                window, number = [], number + 1
        if window:
            yield from self._window(window, epoch, shard, number)

    def _window(self, samples: list[dict[str, Any]], epoch: int, shard: int, number: int):
        rng = random.Random(hash((self.seed, epoch, shard, number)))
        lengths = [len(s["input_ids"]) for s in samples]
        order = sorted(range(len(samples)), key=lambda i: (lengths[i], rng.random()))
        batches = pack_by_length(order, lengths, self.batch_size, self.max_tokens)
        rng.shuffle(batches)
        for batch in batches:
            yield [samples[i] for i in batch]
