"""Record a digest of every training batch, to audit data order across runs and resumes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import lightning.pytorch as pl


def batch_digest(batch) -> str:
    """A short hash of a batch: token ids (order and padding included), or the rows of a prompt batch."""
    if isinstance(batch, dict) and "input_ids" in batch:
        ids = batch["input_ids"].detach().cpu().contiguous()
        payload = ids.numpy().tobytes() + str(tuple(ids.shape)).encode()
    else:  # RL prompt batches: a list of row dicts
        payload = json.dumps(batch, sort_keys=True, default=str).encode()
    return hashlib.sha256(payload).hexdigest()[:16]


class BatchAuditCallback(pl.Callback):
    """Append ``{"step", "epoch", "batch_idx", "digest"}`` per training batch to a JSONL file (rank 0).

    With ``all_ranks``, every rank writes its own file, ``<path stem>.rank<r><suffix>``, and its
    records also hold ``rank`` and ``rows`` (the batch's rows, for RL prompt batches) — to check what
    each rank trained on under data parallelism.
    """

    def __init__(self, path: str, all_ranks: bool = False) -> None:
        self.path = Path(path)
        self.all_ranks = all_ranks

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if not (trainer.is_global_zero or self.all_ranks):
            return
        path = self.path
        record = {
            "step": trainer.global_step,
            "epoch": trainer.current_epoch,
            "batch_idx": batch_idx,
            "digest": batch_digest(batch),
        }
        if self.all_ranks:
            path = path.with_name(f"{path.stem}.rank{trainer.global_rank}{path.suffix}")
            record["rank"] = trainer.global_rank
            if isinstance(batch, list):
                record["rows"] = [batch_digest([row]) for row in batch]
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
