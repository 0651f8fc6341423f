"""The full mixture config lists the 24 reference files; a missing file is an error naming it, or a counted skip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mimesis_pl.data.simulator_rl import SimulatorRLDataModule
from mimesis_pl.tasks.registry import MIXTURE

REPO = Path(__file__).resolve().parents[2]


def test_full_config_lists_every_reference_train_and_val_file():
    data = yaml.safe_load((REPO / "configs/simulator_rl.yaml").read_text())["data"]["init_args"]
    assert data["data_dir"] and data["files"] == [t for t, _, _ in MIXTURE.values()]
    assert data["val_files"] == [v for _, v, _ in MIXTURE.values()]
    assert len(set(data["files"])) == len(set(data["val_files"])) == 24


def _write(path: Path, source: str) -> None:
    path.write_text(json.dumps({"data_source": source, "extra_info": {"index": 0, "intent": "plan a trip"}}) + "\n")


def test_a_missing_file_is_an_error_naming_it_or_a_counted_skip(tmp_path):
    _write(tmp_path / "userllm_rl_train.jsonl", "userllm")
    files = ["userllm_rl_train.jsonl", "coser_rl_train.jsonl"]
    with pytest.raises(FileNotFoundError, match="coser_rl_train.jsonl"):
        SimulatorRLDataModule(files, data_dir=str(tmp_path)).setup()
    dm = SimulatorRLDataModule(files, val_files=["coser_val.jsonl"], data_dir=str(tmp_path), skip_missing=True)
    dm.setup()
    assert [r["data_source"] for r in dm.train_rows] == ["userllm"]
    assert [Path(p).name for p in dm.skipped_files] == ["coser_rl_train.jsonl", "coser_val.jsonl"]
