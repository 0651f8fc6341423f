"""Keep the terminal for what matters: drop Lightning messages that are noise for every mimesis-pl run.

- the "💡 Tip" adverts (litlogger / litmodels) printed by every ``fit``;
- ModelCheckpoint's warning that, under manual optimisation, ``every_n_train_steps`` saves the state
  *after* the optimiser step — that is what our RL modules want (a resumed run continues from the
  weights that produced the next rollouts);
- Lightning's own ``LeafSpec`` deprecation warning under torch ≥ 2.13 (raised inside Lightning).

Real problems are fixed where they arise instead (e.g. the CLI no longer passes ``args`` when it reads
``sys.argv``, which triggered LightningCLI's "args parameter" warning on every command).
"""

from __future__ import annotations

import logging
import warnings

NOISY_WARNINGS = (
    r"Using ModelCheckpoint with manual optimization and every_n_train_steps",
    r".*isinstance\(treespec, LeafSpec\)",
)
NOISY_INFO_PREFIXES = ("💡 Tip:",)


class _DropInfo(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.getMessage()).startswith(NOISY_INFO_PREFIXES)


def silence_known_noise() -> None:
    """Install the filters (idempotent)."""
    for pattern in NOISY_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
        log = logging.getLogger(name)
        if not any(isinstance(f, _DropInfo) for f in log.filters):
            log.addFilter(_DropInfo())
