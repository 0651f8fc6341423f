import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.data import LengthLimits, RoleSwapSFTDataModule
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


def test_no_swap_adds_the_reference_empty_system_message(tiny_tokenizer):
    """#23 item 4 (spec check 31): a no-swap row without a system message gains an empty one (S63)."""
    bare = CHAT[1:]
    out = no_swap(bare)
    assert out[0] == {"role": "system", "content": ""} and out[1:] == bare
    assert no_swap([])[0] == {"role": "system", "content": ""}
    assert no_swap(CHAT) == CHAT  # a system message already first: unchanged
    assert no_swap(CHAT, strip_system=True)[0] == {"role": "system", "content": ""}
    rendered = ChatRenderer(tiny_tokenizer).render(out)  # the per-turn render equals the full render
    assert tiny_tokenizer.decode(rendered.input_ids).startswith(f"{S}system\n{E}")
    assert trained_text(tiny_tokenizer, out) == [f"ai says{E}"]


def test_router_falls_back_to_the_first_substring_key_in_the_reference_order():
    """#23 item 4: the reference's routing (exact key, else the first table key contained in the name) is the
    default; the exact-only table stays an option (S63)."""
    router = ProcessorRouter()
    assert router.processor_name("tom_from_coser") == "no_swap"  # exact
    assert router.processor_name("tom_from_coser_v2") == "swap"  # contains 'coser', the first key
    assert router.processor_name("education_dialogue_x") == "swap"  # 'dialogue' precedes 'education_dialogue'
    assert router.processor_name("humanual_chat_v2") == "swap"  # humanual* wins over 'chat'
    assert router.processor_name("my_chat") == "no_swap" and router.processor_name("sotopia_x") == "no_swap"
    assert router.processor_name("psych101_2024") == "fold_swap"
    with pytest.raises(KeyError, match="unknown data_source 'mystery'"):
        router.processor_name("mystery")
    exact = ProcessorRouter(fallback="exact")
    with pytest.raises(KeyError, match="unknown data_source 'tom_from_coser_v2'"):
        exact.processor_name("tom_from_coser_v2")
    with pytest.raises(ValueError, match="fallback must be"):
        ProcessorRouter(fallback="fuzzy")


def test_strip_system_is_honoured_everywhere():
    for fn in (swap, no_swap, fold_swap):  # no_swap then leads with the reference's empty system message
        assert all(m["role"] != "system" or m == {"role": "system", "content": ""} for m in fn(CHAT, strip_system=True))
        assert all(m["content"] != "sys" for m in fn(CHAT, strip_system=True))


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
        ProcessorRouter(fallback="exact").processor_name("wildchat_extra")  # no substring fallback
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


def test_an_over_long_row_is_cut_not_skipped(tmp_path, tiny_model_path):
    """Spec check 32: the default role-swap limits keep the prompt's end and the response's start (S63)."""
    long = [{"role": "user", "content": "human " * 50}, {"role": "assistant", "content": "ai " * 200}]
    path = write(tmp_path, "long.parquet", [{"data_source": "wildchat", "messages": long}])
    limits = LengthLimits(max_prompt_length=64, max_response_length=32, max_length=4096, truncation="error")
    dm = RoleSwapSFTDataModule(files=[path], tokenizer_path=str(tiny_model_path), limits=limits)
    dm.setup("fit")
    assert dm.stats["train_samples"] == 1 and not any(k.startswith("skipped_") for k in dm.stats)
    sample = dm.train_samples[0]
    first = sample["loss_mask"].index(1)
    assert first <= 64 and len(sample["input_ids"]) - first <= 32
