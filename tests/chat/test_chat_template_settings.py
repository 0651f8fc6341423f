"""``chat_template`` by name or path, wherever a tokenizer is loaded."""

from __future__ import annotations

import pytest

from mimesis_pl.chat import (
    available_templates,
    load_chat_template,
    load_tokenizer,
    suggest_training_template,
)

from ..conftest import TINY_MODEL
from .families import shipped_template


def test_names_paths_and_errors(tmp_path):
    assert {"chatml", "qwen3", "qwen3_5", "qwen2_5", "llama3"} <= set(available_templates())
    path = tmp_path / "mine.jinja"
    path.write_text("{{ messages[0].content }}")
    assert load_chat_template(str(path)) == "{{ messages[0].content }}"
    assert load_chat_template("qwen3").startswith("{#- mimesis-pl training template for Qwen3")
    with pytest.raises(
        ValueError, match=r"'qwen4' is neither a shipped template \(chatml, llama3, .*\) nor an existing file"
    ):
        load_chat_template("qwen4")


@pytest.mark.parametrize(
    ("shipped", "ours"),
    [
        ("qwen3", "qwen3"),
        ("qwen3_5_think", "qwen3_5"),
        ("qwen3_6", "qwen3_5"),
        ("qwen3_8", "qwen3_5"),
        ("qwen2_5", "qwen2_5"),
        ("llama3_1", "llama3"),
        ("llama3_2", "llama3"),
        ("llama3", "llama3"),
    ],
)
def test_each_shipped_family_template_maps_to_our_training_template(shipped, ours):
    assert suggest_training_template(shipped_template(shipped)) == ours
    assert suggest_training_template(load_chat_template(ours)) == ours


def test_load_tokenizer_applies_the_template():
    assert load_tokenizer(str(TINY_MODEL), "llama3").chat_template == load_chat_template("llama3")
    assert "<think>" in load_tokenizer(str(TINY_MODEL)).chat_template  # None keeps the checkpoint's own


def test_datamodule_rejects_an_unknown_template_at_configuration():
    from mimesis_pl.data.chat_sft import JsonlChatSFTDataModule

    with pytest.raises(ValueError, match="neither a shipped template"):
        JsonlChatSFTDataModule(files=["x.jsonl"], chat_template="qwen-3")


def test_eval_agent_settings():
    from mimesis_pl.eval.agent_backend import AgentBackend, EngineAgentSettings, OpenAIChatAgentSettings
    from mimesis_pl.rollout.engines import OpenAIEngineSettings

    with pytest.raises(ValueError, match="does not apply to engine 'openai_chat'.*serve_model.sh --chat-template"):
        OpenAIChatAgentSettings(base_url="http://x/v1", served_model="m", revision="r", chat_template="qwen3")
    # A token-level served agent: the tokenizer is loaded here, nothing is contacted at construction.
    served = {
        "engine": OpenAIEngineSettings(base_url="http://127.0.0.1:9/v1", model="m"),
        "model_path": str(TINY_MODEL),
        "revision": "r1",
    }
    assert AgentBackend(EngineAgentSettings(**served)).revision == "r1"
    backend = AgentBackend(EngineAgentSettings(**served, chat_template="qwen3"))
    assert backend.tokenizer.chat_template == load_chat_template("qwen3")
    assert backend.revision.startswith("r1+template-")  # another template, another cache key
