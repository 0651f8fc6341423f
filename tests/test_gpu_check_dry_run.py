"""The prepared GPU check runs end to end on CPU with tiny shapes (``--dry-run``), so it is known to
work before a GPU is lent: every section succeeds and the JSONL holds what the GPU run will report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "gpu_check.py"


def test_gpu_check_dry_run_writes_one_ok_record_per_section(tmp_path):
    out = tmp_path / "check.jsonl"
    done = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(out)], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    records = {r["section"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert list(records) == ["machine", "dependencies", "build_model", "sft", "grpo", "csd", "fsdp1"]
    assert all(r["ok"] for name, r in records.items() if name != "machine")
    sft = records["sft"]
    assert abs(sft["losses"]["sft"] - sft["losses"]["hf"]) < 1e-4  # same loss, two implementations
    assert set(sft["tok_per_s_median"]) == {"hf", "sft"} and "sft/hf peak_gib" in sft["ratios"]
    for name in ("grpo", "csd", "fsdp1"):
        assert records[name]["global_step"] == 1, name
    assert records["fsdp1"]["metrics"]["train/loss"] > 0
