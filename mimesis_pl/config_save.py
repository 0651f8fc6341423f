"""Write each run's fully resolved ``config.yaml`` without ever replacing a file the user wrote."""

from __future__ import annotations

import logging
from pathlib import Path

from lightning.pytorch.cli import SaveConfigCallback

log = logging.getLogger(__name__)

MARKER = "# Resolved config of a mimesis-pl run (rewritten by the next run without a logger here)."


class RunConfigCallback(SaveConfigCallback):
    """Save the resolved config next to the run's logs.

    With a logger the run folder (``runs/<name>/version_N``) is new, so the file is written there as
    usual. Without one (``--trainer.logger false``) Lightning's folder is the working folder, where a
    ``config.yaml`` may well be the user's own: the file is written only when it is absent or carries
    our marker line from an earlier run; otherwise the save is skipped with a warning naming it.
    """

    def setup(self, trainer, pl_module, stage: str) -> None:
        if trainer.logger is not None:
            super().setup(trainer, pl_module, stage)
            return
        if self.already_saved:
            return
        if trainer.is_global_zero:
            self._save_without_logger(Path(trainer.log_dir or trainer.default_root_dir) / self.config_filename)
            self.already_saved = True

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
