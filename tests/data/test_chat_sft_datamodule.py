import json
import logging

import pytest

from mimesis_pl.data.chat_sft import JsonlChatSFTDataModule
from mimesis_pl.data.truncation import LengthLimits

from ..conftest import ASSETS


def write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


GOOD = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})


def test_bad_rows_are_counted_and_logged(tmp_path, tiny_model_path, caplog):
    path = write(
        tmp_path / "d.jsonl",
        [
            GOOD,
            "{not json",
            json.dumps({"messages": "nope"}),
            json.dumps({"messages": [{"role": "robot", "content": "x"}]}),
            json.dumps({"messages": [{"role": "user", "content": "only context"}]}),
            json.dumps({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a " * 300}]}),
            GOOD,
        ],
    )
    dm = JsonlChatSFTDataModule(files=[path], tokenizer_path=str(tiny_model_path), limits=LengthLimits(None, 64, None))
    with caplog.at_level(logging.WARNING):
        dm.setup("fit")
    assert dm.stats["train_samples"] == 2
    assert dm.stats["skipped_bad_row"] == 2
    assert dm.stats["skipped_render_error"] == 1
    assert dm.stats["skipped_no_trained_tokens"] == 1
    assert dm.stats["skipped_too_long"] == 1
    assert f"{path}:2: not valid JSON" in caplog.text
    assert f"{path}:4: message 0: field 'role'" in caplog.text


def test_raise_mode_names_the_row(tmp_path, tiny_model_path):
    path = write(tmp_path / "d.jsonl", [GOOD, "{not json"])
    dm = JsonlChatSFTDataModule(files=[path], tokenizer_path=str(tiny_model_path), on_bad_sample="raise")
    with pytest.raises(ValueError, match=r"d.jsonl:2: not valid JSON"):
        dm.setup("fit")


def test_val_split_is_stable_and_disjoint(tiny_model_path):
    kwargs = dict(
        files=[str(ASSETS / "data/chat_sft/train.jsonl")], tokenizer_path=str(tiny_model_path), val_fraction=0.25
    )
    a, b = JsonlChatSFTDataModule(**kwargs), JsonlChatSFTDataModule(**kwargs)
    a.setup("fit")
    b.setup("fit")
    ids_a = {s["sample_id"] for s in a.val_samples}
    assert ids_a == {s["sample_id"] for s in b.val_samples}
    assert ids_a and not ids_a & {s["sample_id"] for s in a.train_samples}


def test_missing_file_is_named(tiny_model_path):
    dm = JsonlChatSFTDataModule(files=["nowhere/*.jsonl"], tokenizer_path=str(tiny_model_path))
    with pytest.raises(FileNotFoundError, match="nowhere"):
        dm.setup("fit")


def test_empty_jsonl_says_no_rows_were_read(tmp_path, tiny_model_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    dm = JsonlChatSFTDataModule(files=[str(empty)], tokenizer_path=str(tiny_model_path))
    with pytest.raises(ValueError, match=r"no rows were read: the data files .*empty.jsonl.* hold no conversations"):
        dm.setup("fit")
