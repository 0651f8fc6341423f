"""The prepared GPU check runs on CPU with tiny shapes (``--dry-run``), so it is known to work before a
GPU is lent: every section succeeds and the JSONL holds what the GPU run will report. The default
suite runs the SFT section only (two short processes); the whole check is marked slow (minutes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "gpu_check.py"


def _dry_run(tmp_path, sections: list[str]) -> dict:
    out = tmp_path / "check.jsonl"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--out", str(out), "--sections", *sections],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    records = {r["section"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert list(records) == ["machine", "dependencies", "build_model", *sections]
    assert all(r["ok"] for name, r in records.items() if name != "machine")
    return records


def test_gpu_check_dry_run_sft_section(tmp_path):
    sft = _dry_run(tmp_path, ["sft"])["sft"]
    assert abs(sft["losses"]["sft"] - sft["losses"]["hf"]) < 1e-4  # same loss, two implementations
    assert set(sft["tok_per_s_median"]) == {"hf", "sft"} and "sft/hf peak_gib" in sft["ratios"]


def test_gpu_check_dry_run_csd_teacher_section(tmp_path):
    """One CSD step under gradient checkpointing: prefix-cache teacher = packed teacher (docs/decisions.md A60)."""
    got = _dry_run(tmp_path, ["csd_teacher"])["csd_teacher"]
    assert got["coached_tokens"] > 0 and got["grad_norm"] > 0
    assert got["max_abs_diff_prefix_cache_vs_packed"] < 1e-4


@pytest.mark.slow
def test_gpu_check_dry_run_every_section(tmp_path):
    records = _dry_run(tmp_path, ["sft", "grpo", "csd", "fsdp1", "csd_teacher"])
    for name in ("grpo", "csd", "fsdp1"):
        assert records[name]["global_step"] == 1, name
    assert records["fsdp1"]["metrics"]["train/loss"] > 0


@pytest.mark.slow
def test_gpu_check_dry_run_async_section(tmp_path):
    """k = 0 then k = 1 on the HF engine: the second run measured one step of staleness (docs/decisions.md A91)."""
    runs = _dry_run(tmp_path, ["async"])["async"]
    assert runs["k0"]["global_step"] == runs["k1"]["global_step"] >= 3
    assert runs["k1"]["metrics"]["async/staleness_max"] == 1.0
    assert "async/staleness_max" not in runs["k0"]["metrics"]
