"""Task files that overlap (UserRL's validation file and its per-gym test files) are settled at set-up (issue 34
item 12): the same task with the same content is kept once and counted, the same id with other content is an
error naming both rows — before any episode runs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mimesis_pl.eval.datamodules import GymTaskDataModule

USERRL = str(Path(__file__).resolve().parents[2].parent / "shared" / "data" / "userrl" / "data") + "/"
pytestmark = pytest.mark.skipif(not Path(USERRL).is_dir(), reason=f"UserRL data not found at {USERRL}")


def test_the_validation_file_and_per_gym_test_files_are_kept_once_with_a_count():
    files = [USERRL + "alltest_multiturn/test.parquet", USERRL + "function_multiturn/test.parquet"]
    dm = GymTaskDataModule(files=files, gyms=["function"])
    dm.setup()
    ids = [r["reward_model"]["id"] for r in dm.rows]
    assert len(ids) == len(set(ids)) == 78  # every function test task once (50 of them are in both files)
    assert dm.duplicates == 50


def test_one_task_id_with_different_content_is_an_error_at_set_up(tmp_path):
    rows = pq.read_table(USERRL + "function_multiturn/test.parquet").to_pylist()[:2]
    changed = [dict(rows[0], reward_model={**rows[0]["reward_model"], "ground_truth": "12345"})]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a.parquet")
    pq.write_table(pa.Table.from_pylist(changed), tmp_path / "b.parquet")
    dm = GymTaskDataModule(files=[str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")])
    with pytest.raises(ValueError, match=r"is in .*a\.parquet.* and .*b\.parquet.* with different content"):
        dm.setup()
