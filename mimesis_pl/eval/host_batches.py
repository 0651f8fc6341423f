"""The base of the evaluation DataModules: batches of Python objects that stay on the host.

Its own module so that a fidelity suite's DataModule (``eval/simulator/base.py``) does not load the agent
evaluation's DataModules (gym tasks, replay plans) and everything they import.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl


def as_list(batch: list[Any]) -> list[Any]:
    """The collate function that keeps a batch a list of items."""
    return batch


class HostBatches(pl.LightningDataModule):
    """Batches stay on the host: rows and plans are Python objects (frozen dataclasses, which
    Lightning's device transfer cannot rebuild); only the engine touches the device."""

    def transfer_batch_to_device(self, batch: Any, device: Any, dataloader_idx: int) -> Any:
        return batch
