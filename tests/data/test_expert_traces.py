import asyncio
import json

from mimesis_pl.chat import parse_tool_calls
from mimesis_pl.data import JsonlChatSFTDataModule
from mimesis_pl.data.expert_traces import record_expert_traces
from mimesis_pl.envs import read_gym_tasks

from ..conftest import ASSETS


def test_expert_traces_are_successful_sft_conversations(tmp_path, tiny_model_path):
    tasks = [t for path in sorted((ASSETS / "data/gyms/train").glob("*.parquet")) for t in read_gym_tasks(path)[:2]]
    records, counts = asyncio.run(record_expert_traces(tasks))
    assert len(records) == len(tasks) == 10
    for record in records:
        assert record["score"] >= 1.0 - 1e-9
        roles = [m["role"] for m in record["messages"]]
        assert roles[:2] == ["system", "user"] and roles[-1] == "assistant"
        for m in record["messages"]:
            if m["role"] == "assistant":
                calls, _ = parse_tool_calls(m["content"])
                assert [c.name for c in calls] == ["interact_with_env"]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    dm = JsonlChatSFTDataModule(files=[str(path)], tokenizer_path=str(tiny_model_path), limits=_no_limits())
    dm.setup("fit")
    assert dm.stats["train_samples"] == 10
    # the tool schema is rendered in the prompt, and only assistant turns are trained
    sample = dm.train_samples[0]
    text = dm.tokenizer.decode(sample["input_ids"])
    assert "interact_with_env" in text.split("<|im_start|>user")[0]
    trained = dm.tokenizer.decode([t for t, m in zip(sample["input_ids"], sample["loss_mask"]) if m])
    assert "<|im_start|>" not in trained and trained.count("<|im_end|>") == text.count("<|im_start|>assistant")


def _no_limits():
    from mimesis_pl.data import LengthLimits

    return LengthLimits(None, None, None, "error")


def test_record_experts_refuses_to_overwrite_an_existing_out(tmp_path, capsys):
    import pytest

    from mimesis_pl.data.expert_traces import main

    out = tmp_path / "traces.jsonl"
    out.write_text("my notes\n")
    with pytest.raises(SystemExit) as info:
        main(["--src", "unused.parquet", "--out", str(out)])
    assert info.value.code == 2 and "--overwrite" in capsys.readouterr().err
    assert out.read_text() == "my notes\n"


def test_lapsing_expert_wastes_turns_restating_its_opening_and_still_succeeds():
    tasks = read_gym_tasks(ASSETS / "data/persuade/train/PersuadeGym.parquet")[:40]
    clean, _ = asyncio.run(record_expert_traces(tasks, max_turns=12))
    lapsed, counts = asyncio.run(record_expert_traces(tasks, max_turns=12, lapse_rate=0.4, seed=3))
    again, _ = asyncio.run(record_expert_traces(tasks, max_turns=12, lapse_rate=0.4, seed=3))
    assert lapsed == again  # drawn from (seed, task, turn) only

    def turns(record):
        return [m["content"] for m in record["messages"] if m["role"] == "assistant"]

    opening = turns(clean[0])[0]
    restated = [t for r in lapsed for t in turns(r)[1:] if t.endswith(opening.split("</think>")[1])]
    answered = sum(len(turns(r)) - 1 for r in lapsed) - len(restated)
    assert all(t.startswith("<think>\nI restate my case.") for t in restated)
    # ~40 % of later turns lapse; every recorded trace still answers every point (score 1)
    assert 0.25 < len(restated) / (len(restated) + answered) < 0.55
    assert counts["lapsed_turns/PersuadeGym"] >= len(restated) and all(r["score"] >= 1.0 - 1e-9 for r in lapsed)
    assert sum(len(turns(r)) for r in clean) < sum(len(turns(r)) for r in lapsed)
    assert all(not t.startswith("<think>\nI restate") for r in clean for t in turns(r))


def test_lapse_rate_out_of_range_is_refused(tmp_path, capsys):
    import pytest

    from mimesis_pl.data.expert_traces import main

    with pytest.raises(SystemExit):
        main(
            [
                "--src",
                str(ASSETS / "data/persuade/train/PersuadeGym.parquet"),
                "--out",
                str(tmp_path / "t.jsonl"),
                "--lapse-rate",
                "1.5",
            ]
        )
    assert "--lapse-rate must lie in [0, 1)" in capsys.readouterr().err
    assert not (tmp_path / "t.jsonl").exists()
