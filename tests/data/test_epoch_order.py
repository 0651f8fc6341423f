"""Data order through a real Trainer: each epoch reshuffles, and a mid-epoch resume gives the next batch."""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from mimesis_pl.data.prompts import GymPromptDataModule

ROWS, BATCH, EPOCHS = 12, 2, 3  # 6 batches an epoch


class _RecordBatches(pl.LightningModule):
    """A one-parameter module that records the rows of every training batch."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.seen: list[tuple[int, tuple[str, ...]]] = []

    def training_step(self, batch, batch_idx):
        self.seen.append((self.current_epoch, tuple(row["_source"] for row in batch)))
        return (self.w - 1).pow(2).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _prompt_file(tmp_path: Path) -> str:
    rows = [
        {
            "data_source": "t",
            "prompt": [{"role": "user", "content": f"q{i}"}],
            "reward_model": {"ground_truth": str(i), "env_name": "TelepathyGym"},  # a known gym: checked at set-up
            "extra_info": {"index": i},
        }
        for i in range(ROWS)
    ]
    path = tmp_path / "prompts.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


def _fit(tmp_path: Path, files: str, callbacks=(), ckpt_path: str | None = None) -> _RecordBatches:
    module = _RecordBatches()
    trainer = pl.Trainer(
        accelerator="cpu",
        max_epochs=EPOCHS,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=bool(callbacks),
        callbacks=list(callbacks),
        default_root_dir=tmp_path,
        use_distributed_sampler=False,
    )
    trainer.fit(module, datamodule=GymPromptDataModule([files], batch_size=BATCH, seed=5), ckpt_path=ckpt_path)
    return module


def test_each_epoch_reshuffles_and_resume_mid_epoch_two_gives_the_next_batch(tmp_path):
    files = _prompt_file(tmp_path)
    ckpt_dir = tmp_path / "ckpt"
    straight = _fit(tmp_path, files, [ModelCheckpoint(dirpath=ckpt_dir, every_n_train_steps=14, save_top_k=-1)]).seen
    steps_per_epoch = ROWS // BATCH
    assert len(straight) == EPOCHS * steps_per_epoch
    epochs = [[b for e, b in straight if e == epoch] for epoch in range(EPOCHS)]
    for order in epochs:
        assert sorted(r for b in order for r in b) == sorted(r for b in epochs[0] for r in b)  # every row once
    assert epochs[0] != epochs[1] and epochs[1] != epochs[2] and epochs[0] != epochs[2]

    ckpt = next(ckpt_dir.glob("*step=14*.ckpt"))
    state = torch.load(ckpt, weights_only=False)["GymPromptDataModule"]["train_sampler"]
    assert state["epoch"] == 2 and state["consumed_batches"] == 2

    resumed = _fit(tmp_path / "resumed", files, ckpt_path=str(ckpt)).seen
    assert resumed == straight[14:]  # mid-epoch 2: exactly the next batch, nothing lost or repeated
