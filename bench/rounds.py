"""Shared by every benchmark here: run the compared variants in alternating rounds, report ratios.

A machine shared with other jobs drifts in speed over minutes, so timing variant A for a while and
then variant B measures the drift as much as the code. Here round ``r`` runs every variant once
(A B, then B A, so neither always goes first), each round gives one ratio per compared pair, and
the report is the min / median / max of those per-round ratios.

    from rounds import Rounds
    rounds = Rounds(["hf", "ours"], n_rounds=5)
    for variant in rounds:          # yields "hf", "ours", "ours", "hf", "hf", ...
        rounds.record(variant, seconds=run(variant))
    rounds.print_ratio("ours", "hf", "seconds", lower_is_better=True)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator


def round_order(variants: list[str], n_rounds: int) -> list[tuple[int, str]]:
    """``(round, variant)`` pairs: even rounds in the given order, odd rounds reversed."""
    out = []
    for r in range(n_rounds):
        order = variants if r % 2 == 0 else variants[::-1]
        out.extend((r, v) for v in order)
    return out


def ratio_stats(num: list[float], den: list[float]) -> tuple[float, float, float]:
    """``(min, median, max)`` of the per-round ratios ``num[r] / den[r]``."""
    if len(num) != len(den) or not num:
        raise ValueError(f"need as many values of each variant (got {len(num)} and {len(den)}), at least one")
    ratios = [a / b for a, b in zip(num, den)]
    return min(ratios), statistics.median(ratios), max(ratios)


class Rounds:
    """Iterate the alternating schedule and collect named measurements per variant and round."""

    def __init__(self, variants: list[str], n_rounds: int) -> None:
        if n_rounds < 1:
            raise ValueError(f"n_rounds must be >= 1, got {n_rounds}")
        self.variants = list(variants)
        self.n_rounds = n_rounds
        self.values: dict[str, dict[str, list[float]]] = {v: {} for v in self.variants}
        self.round = 0

    def __iter__(self) -> Iterator[str]:
        for r, variant in round_order(self.variants, self.n_rounds):
            self.round = r
            yield variant

    def record(self, variant: str, **measures: float) -> None:
        for name, value in measures.items():
            self.values[variant].setdefault(name, []).append(float(value))

    def series(self, variant: str, measure: str) -> list[float]:
        return self.values[variant][measure]

    def ratio(self, num: str, den: str, measure: str) -> tuple[float, float, float]:
        return ratio_stats(self.series(num, measure), self.series(den, measure))

    def print_ratio(self, num: str, den: str, measure: str, better: str = "lower") -> tuple[float, float, float]:
        """Print ``num/den`` of ``measure`` as min / median / max over rounds; ``better`` says which way wins."""
        lo, mid, hi = self.ratio(num, den, measure)
        print(
            f"{measure:>18} {num}/{den}: min {lo:.3f}  median {mid:.3f}  max {hi:.3f}  "
            f"({self.n_rounds} rounds, {better} is better)"
        )
        return lo, mid, hi

    def print_table(self, measure: str, fmt: str = "{:.3f}") -> None:
        """Per-variant min / median / max of the raw values of ``measure``."""
        for v in self.variants:
            xs = self.values[v].get(measure)
            if xs:
                print(
                    f"{measure:>18} {v:>14}: "
                    + " / ".join(fmt.format(x) for x in (min(xs), statistics.median(xs), max(xs)))
                    + "  (min / median / max)"
                )

    def summary(self) -> dict:
        return {"rounds": self.n_rounds, "values": self.values}


def run_child(argv: list[str], timeout: float | None = None) -> dict:
    """Run ``python argv...`` and parse the last stdout line as JSON (a fresh process per measurement
    keeps peak-memory readings apart)."""
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, *argv], check=False, capture_output=True, text=True, timeout=timeout, env=env
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {argv} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def peak_rss_bytes() -> int:
    """This process's peak resident set size (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
