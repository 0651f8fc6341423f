"""What every run does when it ends early: services closed on any exception, a checkpoint on SIGTERM.

Lightning runs a module's ``teardown`` only when the stage finishes; on an exception it calls ``on_exception``
and tears down its own pieces, so the shim, the user servers and the judge's HTTP sessions a module started in
``setup`` stayed open (in-process callers kept them listening; failing evaluations printed "Unclosed client
session"). On SIGTERM Lightning stops at the next batch boundary with an exit code of 0 and saves nothing, so
``fit && serve hf/final`` went ahead with no export. :class:`RunGuard` closes the module's services on every
exception and, on SIGTERM during ``fit``, saves a checkpoint first; the CLI then exits with status 143
(decision A72 in docs/decisions.md).
"""

from __future__ import annotations

import logging
from pathlib import Path

import lightning.pytorch as pl
from lightning.pytorch.utilities.exceptions import SIGTERMException

log = logging.getLogger(__name__)

SIGTERM_EXIT_CODE = 143  # 128 + SIGTERM, what a shell reports for a process the signal ended


def sigterm_checkpoint_path(trainer: pl.Trainer) -> Path:
    """Where the checkpoint of a run stopped by SIGTERM goes: the checkpoint callback's folder, else the log dir's."""
    callback = trainer.checkpoint_callback
    folder = getattr(callback, "dirpath", None) if callback is not None else None
    if folder is None:
        folder = Path(trainer.log_dir or trainer.default_root_dir) / "checkpoints"
    return Path(folder) / f"sigterm-step={trainer.global_step}.ckpt"


class RunGuard(pl.Callback):
    """Close the module's services on any exception; on SIGTERM during ``fit`` save a checkpoint first."""

    def __init__(self) -> None:
        self.saved: Path | None = None

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        try:
            if isinstance(exception, SIGTERMException) and trainer.state.fn == "fit":
                path = sigterm_checkpoint_path(trainer)
                trainer.save_checkpoint(path)
                self.saved = path
                log.warning(
                    "stopped by SIGTERM at step %d; checkpoint saved to %s (resume with --ckpt_path %s); "
                    "no final export was written",
                    trainer.global_step,
                    path,
                    path,
                )
        finally:
            stage = trainer.state.fn.value if trainer.state.fn is not None else "fit"
            try:
                pl_module.teardown(stage)
            except Exception:  # the run's own error is the one to report
                log.exception("closing the module's services after %s failed", type(exception).__name__)
