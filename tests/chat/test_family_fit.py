"""Each model family trains through ``mimesis-pl fit`` on the tiny model with its tokenizer-side
behaviour (system prompts, thinking, tool calls) under our training template, and the export carries
that template so a server renders exactly the text that was trained."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from mimesis_pl.chat import ChatRenderer, load_chat_template
from mimesis_pl.cli import main

from ..conftest import REPO, TINY_MODEL
from .families import CONVERSATIONS, DATE, TOOLS, family_tokenizer, without_reasoning

CONFIG = str(REPO / "configs" / "tiny" / "chat_sft.yaml")

# (family, template, template variables, tokenizer kind)
FIT_FAMILIES = [
    pytest.param("llama3", "llama3", {}, "llama", id="llama3"),  # the most different family stays in the fast suite
    pytest.param("qwen3-think", "qwen3", {}, "qwen", id="qwen3-think", marks=pytest.mark.slow),
    pytest.param(
        "qwen3-nothink", "qwen3", {"enable_thinking": False}, "qwen", id="qwen3-nothink", marks=pytest.mark.slow
    ),
    pytest.param(
        "qwen3.5-think", "qwen3_5", {"enable_thinking": True}, "qwen", id="qwen3.5-think", marks=pytest.mark.slow
    ),
    pytest.param(
        "qwen3.5-nothink", "qwen3_5", {"enable_thinking": False}, "qwen", id="qwen3.5-nothink", marks=pytest.mark.slow
    ),
    pytest.param("qwen2.5", "qwen2_5", {}, "qwen", id="qwen2.5", marks=pytest.mark.slow),
]


def family_model(tmp_path: Path, tiny_tokenizer, kind: str) -> Path:
    """The tiny model with the family's tokenizer (its special tokens fit the padded embedding rows)."""
    out = tmp_path / f"tiny-{kind}"
    shutil.copytree(TINY_MODEL, out)
    (out / "chat_template.jinja").unlink()  # the family template comes from the job's chat_template
    tok = family_tokenizer(tiny_tokenizer, kind)
    tok.chat_template = None
    config = json.loads((out / "config.json").read_text())
    assert len(tok) <= config["vocab_size"]
    tok.save_pretrained(out)
    return out


@pytest.mark.parametrize(("family", "template", "variables", "kind"), FIT_FAMILIES)
def test_family_trains_through_fit_and_exports_its_template(
    tmp_path, monkeypatch, tiny_tokenizer, family, template, variables, kind
):
    monkeypatch.chdir(tmp_path)
    model = family_model(tmp_path, tiny_tokenizer, kind)
    conversations = [without_reasoning(c) if "nothink" in family else c for c in CONVERSATIONS.values()]
    data = tmp_path / "train.jsonl"
    with data.open("w") as fh:
        for i in range(4):  # 12 rows: every conversation with and without tools
            for messages in conversations:
                fh.write(json.dumps({"messages": messages, **({"tools": TOOLS} if i % 2 else {})}) + "\n")
    thinking = [f"--data.init_args.enable_thinking={str(variables['enable_thinking']).lower()}"] if variables else []
    main(
        [
            "fit",
            "--config",
            CONFIG,
            f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
            f"--trainer.default_root_dir={tmp_path}",
            "--trainer.max_steps=2",
            "--trainer.val_check_interval=100",
            f"--model.init_args.model_path={model}",
            f"--data.init_args.files=[{data}]",
            "--data.init_args.val_fraction=0",
            "--data.init_args.batch_size=4",
            "--data.init_args.on_bad_sample=raise",
            f"--data.init_args.chat_template={template}",
            "--data.init_args.limits.max_prompt_length=4096",
            "--data.init_args.limits.max_length=4096",
            *thinking,
        ]
    )
    run = next((tmp_path / "runs" / "tiny_chat_sft").iterdir())
    assert f"chat_template: {template}" in (run / "config.yaml").read_text()
    export = run / "hf" / "final"
    assert (export / "chat_template.jinja").read_text() == load_chat_template(template)

    # Serving parity: the exported tokenizer's own template (what vLLM applies) renders the trained text.
    from transformers import AutoTokenizer

    served = AutoTokenizer.from_pretrained(export)
    trained = ChatRenderer(
        family_tokenizer(tiny_tokenizer, kind),
        tools=TOOLS,
        chat_template=template,
        **variables,
        **(DATE if kind == "llama" else {}),
    )
    for messages in conversations:
        text = served.apply_chat_template(
            messages, tools=TOOLS, tokenize=False, **variables, **(DATE if kind == "llama" else {})
        )
        assert text == trained.render_text(messages)
        ids = trained.render(messages).input_ids
        assert served(text, add_special_tokens=False)["input_ids"] == ids


def test_data_show_renders_with_the_chosen_template(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["data", "show", "--config", CONFIG, "--n", "1", "--json", "--chat-template", "qwen3"]) == 0
    segments = json.loads(capsys.readouterr().out)[0]["segments"]
    trained = [s["text"] for s in segments if s["trained"]]
    assert trained and all(t.startswith("<think>\n\n</think>\n\n") and t.endswith("<|im_end|>") for t in trained)
    assert main(["data", "show", "--config", CONFIG, "--n", "1", "--chat-template", "qwen9"]) == 2
    assert re.search("neither a shipped template .*qwen3_5.* nor an existing file", capsys.readouterr().err)


def test_fit_with_a_shipped_template_that_rewrites_history_names_the_fix(tmp_path, monkeypatch, capsys):
    from mimesis_pl.chat import RenderError

    from .families import shipped_template

    monkeypatch.chdir(tmp_path)
    shipped = tmp_path / "qwen3_shipped.jinja"
    shipped.write_text(shipped_template("qwen3"))
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"messages": CONVERSATIONS["think-two-turns"]}) + "\n")
    rc = main(
        [
            "fit",
            "--config",
            CONFIG,
            f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
            f"--model.init_args.model_path={TINY_MODEL}",
            f"--data.init_args.files=[{data}]",
            "--data.init_args.val_fraction=0",
            "--data.init_args.on_bad_sample=raise",
            f"--data.init_args.chat_template={shipped}",
        ]
    )
    assert rc == 2  # a set-up error: one line (E29), naming the row and the fix
    assert RenderError.__name__ in (err := capsys.readouterr().err)
    assert re.search(r"train.jsonl:1: message 2 \(user\): rendering it changed the text.*chat_template: qwen3 ", err)
