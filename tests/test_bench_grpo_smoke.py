"""The GRPO-vs-TRL benchmark still runs end to end (tiny sizes), so a TRL or Lightning upgrade cannot
silently break it. In the default suite (~15 s, mostly imports: every bench script runs there); skipped where
TRL is not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "bench_grpo_vs_trl.py"


def test_bench_grpo_vs_trl_runs_and_both_sides_generate_the_same_tokens():
    args = ["--prompts", "2", "--n", "2", "--max-new-tokens", "4", "--steps", "2", "--rounds", "1"]
    command = [sys.executable, str(SCRIPT), *args]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = {line[:30].strip(): line[30:].split() for line in done.stdout.splitlines() if line[:30].strip()}
    assert lines["tokens generated per step"] == ["16", "16"]  # 2 prompts x n=2 x 4 forced tokens, both sides
    assert lines["padded prompt+completion width"][0] == lines["padded prompt+completion width"][1]
    assert "ratio ours/TRL of the median step time" in done.stdout
