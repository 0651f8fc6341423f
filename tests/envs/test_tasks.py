"""GymTask: reading UserRL rows, keeping hidden fields out of anything printed, clear errors."""

from __future__ import annotations

import pytest
from gym_fixtures import PARQUET, make_row, needs_userrl, tasks

from mimesis_pl.envs import GymTask, TaskDataError, read_gym_tasks


def test_public_and_hidden_are_kept_apart():
    row = make_row(
        "TurtleGym",
        "Title: T\nSurface: S",
        reward_model={"bottom": "SECRET STORY", "ground_truth": "SECRET STORY"},
        create_kwargs={"title": "T", "surface": "S", "bottom": "SECRET STORY"},
    )
    task = GymTask.from_row(row, source="file.parquet:row 3")
    assert task.env_name == "TurtleGym" and task.key == "T" and task.opening_text == "Title: T\nSurface: S"
    assert task.hidden["bottom"] == "SECRET STORY" and "style" not in task.hidden
    assert "SECRET" not in repr(task) and "SECRET" not in str(task)
    assert all("SECRET" not in m["content"] for m in task.public_messages())


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.pop("prompt"), "prompt"),
        (lambda r: r.update(prompt=[{"role": "robot", "content": "x"}]), r"prompt\[0\]"),
        (lambda r: r.update(prompt=[{"role": "system", "content": "x"}]), "no user message"),
        (lambda r: r["extra_info"].update(tools_kwargs="oops"), "tools_kwargs"),
        (
            lambda r: (
                r["extra_info"]["tools_kwargs"]["interact_with_env"]["create_kwargs"].pop("env_name"),
                r["reward_model"].pop("env_name"),
            ),
            "no gym name",
        ),
    ],
)
def test_bad_rows_name_source_and_field(mutate, message):
    row = make_row(
        "TelepathyGym", "I am thinking of a fruit.", reward_model={"title": "Kiwi"}, create_kwargs={"title": "Kiwi"}
    )
    mutate(row)
    with pytest.raises(TaskDataError, match=message) as err:
        GymTask.from_row(row, source="data.parquet:row 7")
    assert "data.parquet:row 7" in str(err.value)


@needs_userrl
def test_reads_every_builtin_gym_file_and_the_merged_union_struct():
    for env_name in ("FunctionGym", "TelepathyGym", "TurtleGym", "IntentionGym", "PersuadeGym"):
        loaded = tasks(env_name)
        assert loaded and all(t.env_name == env_name for t in loaded)
        assert ":row 0" in loaded[0].source
    merged = read_gym_tasks(PARQUET / "alltest_multiturn" / "test.parquet", env_names=["PersuadeGym"])
    assert len(merged) == 42
    # The merged file's union struct yields None for other gyms' keys; those are dropped.
    assert all(v is not None for t in merged for v in t.hidden.values()) and "bottom" not in merged[0].hidden


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        read_gym_tasks(tmp_path / "nope.parquet")
