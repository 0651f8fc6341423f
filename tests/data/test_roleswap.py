import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.data import RoleSwapSFTDataModule
from mimesis_pl.data.processors import DEFAULT_ROUTING, ProcessorRouter, fold_swap, no_swap, swap

S, E = "<|im_start|>", "<|im_end|>"
CHAT = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "human says"},
    {"role": "assistant", "content": "ai says"},
    {"role": "user", "content": "human again"},
]


def trained_text(tok, messages):
    out = ChatRenderer(tok).render(messages)
    runs, cur = [], []
    for t, m in zip(out.input_ids, out.loss_mask):
        if m:
            cur.append(t)
        elif cur:
            runs.append(tok.decode(cur))
            cur = []
    return runs + ([tok.decode(cur)] if cur else [])


def test_swap_trains_exactly_the_human_turns(tiny_tokenizer):
    swapped = swap(CHAT)
    assert [m["role"] for m in swapped] == ["system", "assistant", "user", "assistant"]
    assert trained_text(tiny_tokenizer, swapped) == [f"human says{E}", f"human again{E}"]
    assert CHAT[1]["role"] == "user"  # the input is not mutated


def test_no_swap_trains_the_assistant(tiny_tokenizer):
    assert trained_text(tiny_tokenizer, no_swap(CHAT)) == [f"ai says{E}"]


def test_strip_system_is_honoured_everywhere():
    for fn in (swap, no_swap, fold_swap):
        assert all(m["role"] != "system" for m in fn(CHAT, strip_system=True))


def test_fold_keeps_roles_and_summarises_earlier_turns():
    long = [{"role": "system", "content": "s"}] + [
        {"role": "user" if k % 2 == 0 else "assistant", "content": f"t{k}"} for k in range(6)
    ]
    out = fold_swap(long, keep_turns=2)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[1]["content"] == "[Earlier conversation]\nhuman: t0\n\nassistant: t1\n\nhuman: t2\n\nassistant: t3"
    assert out[2] == {"role": "assistant", "content": "t4"}  # the human's t4, trained, role not rewritten


def test_router_exact_table_and_errors():
    router = ProcessorRouter()
    assert router.processor_name("wildchat") == "swap"
    assert router.processor_name("human_llm") == "no_swap"
    assert router.processor_name("convokit_casino-corpus") == "swap"
    with pytest.raises(KeyError, match="unknown data_source 'wildchat_extra'.*known sources"):
        router.processor_name("wildchat_extra")  # no substring fallback
    assert ProcessorRouter(default_processor="no_swap").processor_name("anything") == "no_swap"
    assert ProcessorRouter(routing={"mine": "no_swap"}).processor_name("mine") == "no_swap"
    with pytest.raises(ValueError, match="unknown processor"):
        ProcessorRouter(routing={"x": "flip"})
    assert len(DEFAULT_ROUTING) > 60


def write(tmp_path, name, rows):
    path = tmp_path / name
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


def test_datamodule_counts_sources_and_bad_rows(tmp_path, tiny_model_path):
    good = {"data_source": "wildchat", "messages": CHAT}
    path = write(
        tmp_path,
        "mix.parquet",
        [
            good,
            {"data_source": "mystery", "messages": CHAT},
            {"data_source": "lmsys", "messages": []},
            {"data_source": "human_llm", "messages": CHAT},
        ],
    )
    dm = RoleSwapSFTDataModule(files=[f"{path}:2"], tokenizer_path=str(tiny_model_path))
    dm.setup("fit")
    assert dm.stats["skipped_unknown_data_source"] == 2  # the row is drawn twice (ratio 2)
    assert dm.stats["skipped_bad_row"] == 2
    assert dm.stats["source/wildchat"] == 2 and dm.stats["source/human_llm"] == 2
    assert dm.stats["train_samples"] == 4
    assert any("mystery" in e and "known sources" in e for e in dm.skip_examples)


def test_missing_column_is_named(tmp_path, tiny_model_path):
    path = write(tmp_path, "bad.parquet", [{"messages": CHAT}])
    dm = RoleSwapSFTDataModule(files=[path], tokenizer_path=str(tiny_model_path))
    with pytest.raises(ValueError, match=r"bad.parquet: missing column\(s\) \['data_source'\]"):
        dm.setup("fit")


def test_val_files_and_max_samples(tmp_path, tiny_model_path):
    train = write(tmp_path, "t.parquet", [{"data_source": "wildchat", "messages": CHAT}] * 10)
    val = write(tmp_path, "v.parquet", [{"data_source": "wildchat", "messages": CHAT}] * 3)
    dm = RoleSwapSFTDataModule(files=[train], val_files=[val], max_samples=4, tokenizer_path=str(tiny_model_path))
    dm.setup("fit")
    assert (len(dm.train_samples), len(dm.val_samples)) == (4, 3)


@pytest.mark.parametrize(
    "rows",
    [
        [{"data_source": "wildchat", "conversation": CHAT}],  # the column has another name
        [{"data_source": "wildchat", "extra_info": {"index": 3}}],  # extra_info without messages
    ],
)
def test_file_without_messages_column_is_a_schema_error(tmp_path, tiny_model_path, rows):
    good = write(tmp_path, "good.parquet", [{"data_source": "wildchat", "messages": CHAT}] * 3)
    bad = write(tmp_path, "renamed.parquet", rows * 5)
    dm = RoleSwapSFTDataModule(files=[good, bad], tokenizer_path=str(tiny_model_path))
    with pytest.raises(ValueError, match=r"renamed.parquet: no 'messages' column"):
        dm.setup("fit")  # not five rows counted as bad_row and a quiet run on the other file


def test_corrupt_parquet_file_is_named(tmp_path, tiny_model_path):
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 this is not parquet")
    dm = RoleSwapSFTDataModule(files=[str(broken)], tokenizer_path=str(tiny_model_path))
    with pytest.raises(ValueError, match=r"broken.parquet: not a readable parquet file"):
        dm.setup("fit")
