"""Write each run's fully resolved ``config.yaml`` without ever replacing a file the user wrote; claim the run
folder for this run (D21) and remove it when set-up fails before any batch (E29)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from lightning.pytorch.cli import SaveConfigCallback

from .run_folder import claim_run_folder, topmost_missing

log = logging.getLogger(__name__)

MARKER = "# Resolved config of a mimesis-pl run (rewritten by the next run without a logger here)."


class RunConfigCallback(SaveConfigCallback):
    """Save the resolved config next to the run's logs.

    With a logger the run folder (``runs/<name>/version_N``) is new, so the file is written there as
    usual. Without one (``--trainer.logger false``) Lightning's folder is the working folder, where a
    ``config.yaml`` may well be the user's own: the file is written only when it is absent or carries
    our marker line from an earlier run; otherwise the save is skipped with a warning naming it.
    """

    _lock: Path | None = None
    created: Path | None = None  # the run folder, when this run made it
    batches_started = False

    def claim(self, trainer) -> None:
        """Claim the logger's run folder for this run (D21); called by the CLI before the trainer runs, so before
        the logger, the data or the model write or load anything."""
        if trainer.logger is not None and trainer.is_global_zero and self._lock is None and trainer.log_dir:
            folder = Path(trainer.log_dir)
            self.created = topmost_missing(folder.absolute())
            self._lock = claim_run_folder(folder)

    def on_train_batch_start(self, *args, **kwargs) -> None:
        self.batches_started = True

    def on_validation_batch_start(self, *args, **kwargs) -> None:
        self.batches_started = True

    def on_test_batch_start(self, *args, **kwargs) -> None:
        self.batches_started = True

    def remove_unused_run_folder(self) -> Path | None:
        """Delete the run folder this run made when no batch ever started (a set-up error: E29); its path."""
        folder, self.created = self.created, None
        if folder is None or self.batches_started or not folder.is_dir():
            return None
        self._release()
        shutil.rmtree(folder, ignore_errors=True)
        return folder

    def setup(self, trainer, pl_module, stage: str) -> None:
        if trainer.logger is not None:
            super().setup(trainer, pl_module, stage)
            return
        if self.already_saved:
            return
        if trainer.is_global_zero:
            self._save_without_logger(Path(trainer.log_dir or trainer.default_root_dir) / self.config_filename)
            self.already_saved = True

    def teardown(self, trainer, pl_module, stage: str) -> None:
        self._release()

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.unlink(missing_ok=True)
            self._lock = None

    def _save_without_logger(self, path: Path) -> None:
        if path.exists() and not _written_by_us(path):
            log.warning("not saving the resolved config: %s exists and is not ours (it was not overwritten)", path)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{MARKER}\n{self.parser.dump(self.config, skip_none=False)}", encoding="utf-8")


def _written_by_us(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.readline().rstrip("\n") == MARKER
    except (OSError, UnicodeDecodeError):
        return False
