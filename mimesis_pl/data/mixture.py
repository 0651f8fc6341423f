"""Parquet mixtures: ``path_or_glob.parquet[:ratio]`` specs, exact sampling, lazy row access.

A ratio ``r`` takes every row of a file ``⌊r⌋`` times and a further ``⌊(r − ⌊r⌋)·N⌋`` distinct rows
drawn without replacement — never a bootstrap, so every row appears at least ``⌊r⌋`` times (the
reference drew ``r·N`` rows with replacement and silently lost coverage; docs/decisions.md S15). Only
parquet footers are read until a row is needed; rows are read one row group at a time.
"""

from __future__ import annotations

import glob
import math
import random
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass(frozen=True)
class FileSpec:
    path: str
    ratio: float = 1.0


def parse_file_specs(specs: str | list[str]) -> list[FileSpec]:
    """Parse ``path_or_glob[:ratio]`` tokens (a list, or one whitespace-separated string).

    Globs (``*``, ``?``, ``[``) expand in sorted order and each match gets the token's ratio; a
    glob that matches nothing, a missing file or a negative ratio is an error naming the token.
    """
    tokens = specs.split() if isinstance(specs, str) else list(specs)
    out: list[FileSpec] = []
    for token in tokens:
        path, ratio = token, 1.0
        if ":" in token:
            head, tail = token.rsplit(":", 1)
            try:
                ratio = float(tail)
                path = head
            except ValueError:  # a colon that is part of the path (e.g. a URL scheme)
                pass
        if not math.isfinite(ratio) or ratio < 0:
            raise ValueError(f"file spec {token!r}: ratio must be a finite number >= 0, got {ratio}")
        if any(ch in path for ch in "*?["):
            matches = sorted(glob.glob(path))
            if not matches:
                raise FileNotFoundError(f"file spec {token!r}: the glob {path!r} matches no file")
            out.extend(FileSpec(m, ratio) for m in matches)
        else:
            if not Path(path).is_file():
                raise FileNotFoundError(f"file spec {token!r}: no such file {path!r}")
            out.append(FileSpec(path, ratio))
    return out


def sample_counts(num_rows: int, ratio: float) -> tuple[int, int]:
    """``(full_passes, extra_rows)`` for a file of ``num_rows`` rows at ``ratio``."""
    full = math.floor(ratio)
    extra = math.floor((ratio - full) * num_rows + 1e-9)  # the epsilon absorbs float noise like 0.3*10
    return full, min(extra, num_rows)


def mixture_index(row_counts: list[int], ratios: list[float], seed: int = 0, max_samples: int | None = None):
    """The shuffled list of ``(file_index, row_index)`` draws of a mixture (deterministic in ``seed``)."""
    if len(row_counts) != len(ratios):
        raise ValueError(f"row_counts ({len(row_counts)}) and ratios ({len(ratios)}) differ in length")
    rng = random.Random(seed)
    index: list[tuple[int, int]] = []
    for f, (n, ratio) in enumerate(zip(row_counts, ratios)):
        full, extra = sample_counts(n, ratio)
        for _ in range(full):
            index.extend((f, i) for i in range(n))
        index.extend((f, i) for i in sorted(rng.sample(range(n), extra)))
    rng.shuffle(index)
    if max_samples is not None and max_samples >= 0:
        index = index[:max_samples]
    return index


class ParquetRows:
    """Random access to rows of several parquet files, reading footers eagerly and data lazily.

    ``row(f, i)`` reads the row group that holds row ``i`` of file ``f`` (kept in a small LRU cache
    per reader) and returns the row as a plain dict. ``row_groups_read`` counts the reads.
    """

    def __init__(self, paths: list[str], cache_row_groups: int = 2) -> None:
        self.paths = list(paths)
        self._files = [open_parquet(p) for p in self.paths]
        self._starts: list[list[int]] = []
        for pf in self._files:
            starts, total = [], 0
            for g in range(pf.metadata.num_row_groups):
                starts.append(total)
                total += pf.metadata.row_group(g).num_rows
            self._starts.append(starts)
        self.num_rows = [pf.metadata.num_rows for pf in self._files]
        self._cache: OrderedDict[tuple[int, int], list[dict[str, Any]]] = OrderedDict()
        self._cache_size = max(1, cache_row_groups)
        self.row_groups_read = 0

    def schema_names(self, f: int) -> list[str]:
        return list(self._files[f].schema_arrow.names)

    def schema(self, f: int) -> pa.Schema:
        return self._files[f].schema_arrow

    def row(self, f: int, i: int) -> dict[str, Any]:
        if not 0 <= i < self.num_rows[f]:
            raise IndexError(f"{self.paths[f]}: row {i} out of range (file has {self.num_rows[f]} rows)")
        starts = self._starts[f]
        g = _bisect_right(starts, i) - 1
        key = (f, g)
        rows = self._cache.get(key)
        if rows is None:
            rows = self._files[f].read_row_group(g).to_pylist()
            self.row_groups_read += 1
            self._cache[key] = rows
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return rows[i - starts[g]]


def open_parquet(path: str | Path) -> pq.ParquetFile:
    """Open a parquet file; a file that is not valid parquet is an error naming it."""
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        raise ValueError(f"{path}: not a readable parquet file ({type(err).__name__}: {err})") from err


def _bisect_right(values: list[int], x: int) -> int:
    lo, hi = 0, len(values)
    while lo < hi:
        mid = (lo + hi) // 2
        if x < values[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo
