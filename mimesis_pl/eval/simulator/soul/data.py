"""SOUL's inputs: the one axis map, the validation rows (C3 parquet or JSONL, ``<set>_val.*``), their
DataModule and the paper's published rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimesis_pl.eval.simulator.base import ItemDataModule
from mimesis_pl.eval.simulator.rows import DataFormatError, field_of, messages_of, read_published, rows_of
from mimesis_pl.tasks.registry import soul_axes, task_specs


def soul_sets() -> list[str]:
    """The SOUL data sets in report order: each registered task's data_source that has a ``soul_axis``, by axis
    (:func:`mimesis_pl.tasks.registry.soul_axes`: S23's one axis map, read on each call)."""
    return [source for sources in soul_axes().values() for source in sources]


def soul_names() -> dict[str, str]:
    """Display name of each SOUL set (``TaskSpec.display_name``), in report order."""
    specs = task_specs()
    return {source: specs[source].display_name for source in soul_sets()}


@dataclass(frozen=True)
class SoulRow:
    data_source: str
    index: int
    prompt: tuple[dict[str, str], ...]
    extra_info: Mapping[str, Any]


def load_soul_validation(paths: Sequence[str]) -> dict[str, list[SoulRow]]:
    """SOUL validation parquets grouped by ``data_source``; every source must be a SOUL set (:func:`soul_sets`: the
    27 built-in ones and any registered with a ``soul_axis``), every row needs ``prompt`` and ``extra_info.index``
    (unique per source)."""
    known = set(soul_sets())
    out: dict[str, list[SoulRow]] = {}
    seen: set[tuple[str, int]] = set()
    for _, where, row in rows_of(paths):
        source = field_of(row, "data_source", where)
        if source not in known:
            raise DataFormatError(f"{where}: data_source {source!r} is not a SOUL dataset (known: {sorted(known)})")
        extra = field_of(row, "extra_info", where, dict)
        index = field_of(extra, "index", f"{where}: extra_info", int)
        if (source, index) in seen:
            raise DataFormatError(f"{where}: {source} index {index} appears twice")
        seen.add((source, index))
        prompt = messages_of(field_of(row, "prompt", where, (list, tuple)), where, "prompt")
        out.setdefault(source, []).append(SoulRow(source, index, prompt, extra))
    return out


class SoulDataModule(ItemDataModule):
    """SOUL validation rows (C3 parquet or JSONL, ``<set>_val.*``), in axis order, each set's rows by index.

    Args:
        files: files, folders or globs of validation rows.
        sets: the ``data_source`` keys to run (default: every set found in ``files``); each is run by its
            simulator-RL task (every SOUL set has one in ``mimesis_pl.tasks.registry.BUILTIN_TASKS``). An empty
            list is an error (it would run nothing and leave an older report in place).
        limit: first N rows *per set*; ``batch_size``: rows per ``test_step``.
    """

    def __init__(
        self, files: list[str], sets: list[str] | None = None, limit: int | None = None, batch_size: int = 64
    ) -> None:
        super().__init__(files=files, limit=limit, batch_size=batch_size)
        if sets is not None and not list(sets):
            raise ValueError(
                "SOUL sets: [] selects no set, so nothing would run and no report would be written; "
                "list the data_source keys to run, or leave sets unset (null) to run every set found in files"
            )
        self.sets = None if sets is None else list(sets)

    def load(self) -> list[Any]:
        known = soul_sets()
        by_set = load_soul_validation(self.files)
        if self.sets is not None:
            unknown = [s for s in self.sets if s not in known]
            absent = [s for s in self.sets if s in known and s not in by_set]
            if unknown or absent:
                raise ValueError(
                    f"SOUL sets: {unknown or absent} {'are not SOUL sets' if unknown else 'have no rows'} "
                    f"in {self.files} (SOUL sets: {known})"
                )
        chosen = [s for s in known if s in by_set and (self.sets is None or s in self.sets)]
        return [row for s in chosen for row in sorted(by_set[s], key=lambda r: r.index)[: self.limit]]

    def setup(self, stage: str | None = None) -> None:
        if not self.items:
            self.items = self.load()
        if not self.items:
            raise ValueError(f"SOUL: no validation row in {self.files}; nothing to evaluate")


# The paper's SOUL-Index rows (CONV, SS, COG, ROLE, EVAL, Overall; Overall row-weighted, S23).
SOUL = read_published(Path(__file__).with_name("published.json"))["rows"]
