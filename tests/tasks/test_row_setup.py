"""Data set-up reads every row with its task: a file its task cannot read stops the run naming the first bad row
and the count per family, or with ``skip_bad_rows`` is a counted, logged skip. A task plugs in its own reading by
defining ``parse_row``; the default reads ``extra_info``. Also: the transcript writer on malformed ``extra_info``."""

from __future__ import annotations

import json
import logging

import pytest
from reference_rows import reference_row

from mimesis_pl.data.simulator_rl import SimulatorRLDataModule, read_task_rows
from mimesis_pl.tasks.base import RowError, TaskResult, parse_row
from mimesis_pl.tasks.transcripts import write_transcript


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _broken(source: str, field: str) -> dict:
    row = reference_row(source)
    del row["extra_info"][field]
    return row


def test_a_file_with_rows_its_task_cannot_read_stops_set_up_naming_the_first_and_the_count_per_family(tmp_path):
    rows = [
        reference_row("sotopia"),
        _broken("sotopia", "scenario"),
        _broken("humanual-chat", "completion"),
        _broken("sotopia", "agent1_name"),
        reference_row("userllm"),
    ]
    path = _write(tmp_path / "mixed.jsonl", rows)
    with pytest.raises(RowError) as err:
        read_task_rows([path])
    message = str(err.value)
    assert "3 rows their task cannot read" in message
    assert f"sotopia: 2 (first: {path}:row1: extra_info needs field 'scenario')" in message
    assert f"humanual-chat: 1 (first: {path}:row2: extra_info needs field 'completion')" in message
    assert "skip_bad_rows" in message


def test_skip_bad_rows_is_a_counted_logged_skip(tmp_path, caplog):
    train = _write(tmp_path / "train.jsonl", [reference_row("coser"), _broken("coser", "circumstance")])
    val = _write(tmp_path / "val.jsonl", [reference_row("mirrorbench"), _broken("mirrorbench", "turns")])
    with pytest.raises(RowError, match="coser: 1"):
        SimulatorRLDataModule([train], val_files=[val]).setup()
    dm = SimulatorRLDataModule([train], val_files=[val], skip_bad_rows=True)
    with caplog.at_level(logging.WARNING, logger="mimesis_pl.data.simulator_rl"):
        dm.setup()
    assert [r["data_source"] for r in dm.train_rows] == ["coser"]
    assert [r["data_source"] for r in dm.val_rows] == ["mirrorbench"]
    assert dict(dm.bad_rows) == {"coser": 1, "mirrorbench": 1}
    assert "skipped 1 rows their task cannot read: coser: 1" in caplog.text
    assert "skipped 1 rows their task cannot read: mirrorbench: 1" in caplog.text


def test_a_validation_row_needs_its_index(tmp_path):
    row = reference_row("userllm")
    del row["extra_info"]["index"]
    path = _write(tmp_path / "val.jsonl", [row])
    assert read_task_rows([path])  # a training row may go without
    with pytest.raises(RowError, match=r"val\.jsonl:row0: a validation row needs field extra_info\.index"):
        read_task_rows([path], validation=True)


def test_parse_row_uses_the_tasks_own_reader_or_reads_extra_info_by_default():
    class Plain:
        data_source = "x"

    class Own:
        data_source = "y"

        def parse_row(self, row):
            if "needed" not in row["extra_info"]:
                raise RowError("needs field 'needed'")
            return row["extra_info"]["needed"]

    assert parse_row(Plain(), {"extra_info": json.dumps({"a": 1})}) == {"a": 1}
    with pytest.raises(RowError, match="extra_info must be a dict"):
        parse_row(Plain(), {"data_source": "x", "extra_info": [1]})
    assert parse_row(Own(), {"extra_info": {"needed": 3}}) == 3
    with pytest.raises(RowError, match="needed"):
        parse_row(Own(), {"extra_info": {}})


@pytest.mark.parametrize("info", ['{"index": 3', "[1, 2]"])
def test_the_transcript_of_a_row_with_malformed_extra_info_is_written_under_its_file_tag(tmp_path, info):
    row = {"data_source": "sotopia", "extra_info": info, "_source": "val.jsonl:row4"}
    result = TaskResult("sotopia", "g-0", "task_error", 0.0, 0.0, {"all/task_error": 1.0}, None, error="RowError: x")
    path = write_transcript(tmp_path, row, result, experiment_name="e", global_step=0)
    record = json.loads(path.read_text())
    assert path.name == "sotopia-val.jsonl_row4.json" and record["status"] == "task_error"
