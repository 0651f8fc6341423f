"""``mimesis-pl data prepare-gyms``: quoted globs, no stale files on a rerun, other files never touched."""

from __future__ import annotations

import json

import pytest

from mimesis_pl.data.gym_prep import main

from ..conftest import ASSETS

GYMS = ASSETS / "data" / "gyms" / "train"


def _files(out) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet"))


def test_rerun_with_fewer_gyms_leaves_no_stale_files_and_accepts_a_quoted_glob(tmp_path, capsys):
    out = tmp_path / "gyms"
    assert main(["--src", str(GYMS / "*.parquet"), "--out", str(out)]) == 0  # the glob as a shell would not expand it
    assert "train/TelepathyGym.parquet" in _files(out) and len(_files(out)) == 10
    assert main(["--src", str(GYMS / "*.parquet"), "--out", str(out), "--gyms", "FunctionGym"]) == 0
    assert _files(out) == ["train/FunctionGym.parquet", "val/FunctionGym.parquet"]
    assert json.loads((out / "prepare-gyms.json").read_text())["files"] == _files(out)
    capsys.readouterr()


def test_files_it_did_not_write_are_never_touched(tmp_path):
    out = tmp_path / "gyms"
    (out / "train").mkdir(parents=True)
    mine = out / "train" / "MyGym.parquet"
    mine.write_bytes(b"the user's own file")
    with pytest.raises(FileExistsError, match="MyGym.parquet.*not written by prepare-gyms"):
        main(["--src", str(GYMS / "FunctionGym.parquet"), "--out", str(out)])
    assert mine.read_bytes() == b"the user's own file"


def test_a_glob_that_matches_nothing_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        main(["--src", str(tmp_path / "nope*.parquet"), "--out", str(tmp_path / "out")])
