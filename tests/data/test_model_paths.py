"""Model and tokenizer paths: a missing local folder fails at once, a folder without a tokenizer fails once."""

from __future__ import annotations

import shutil
import time

import pytest

from mimesis_pl.data.chat_sft import JsonlChatSFTDataModule
from mimesis_pl.model_paths import check_model_path, looks_local

from ..conftest import ASSETS, REPO, TINY_MODEL


@pytest.mark.parametrize(
    "path, local",
    [
        ("assets/nope-model", True),
        ("./m", True),
        ("/abs/m", True),
        ("~/m", True),
        ("a/b/c", True),
        ("Qwen/Qwen3-8B", False),
        ("gpt2", False),
    ],
)
def test_looks_local(path, local, monkeypatch):
    monkeypatch.chdir(REPO)  # assets/ is a folder here, Qwen/ is not
    assert looks_local(path) is local


def test_missing_local_model_path_fails_at_once_naming_it(monkeypatch):
    from mimesis_pl.modules import CausalLMSFT

    monkeypatch.chdir(REPO)
    started = time.monotonic()
    with pytest.raises(FileNotFoundError, match="model.init_args.model_path: no model folder at 'assets/nope-model'"):
        CausalLMSFT(model_path="assets/nope-model")
    assert time.monotonic() - started < 5
    assert check_model_path("Qwen/Qwen3-8B", "model_path") == "Qwen/Qwen3-8B"  # hub ids stay possible


def test_missing_agent_model_path_fails_when_configured(monkeypatch):
    from mimesis_pl.eval.agent_backend import EngineAgentSettings

    monkeypatch.chdir(REPO)
    with pytest.raises(FileNotFoundError, match="agent.model_path"):
        EngineAgentSettings(model_path="assets/nope-agent")


def test_model_folder_without_tokenizer_is_one_error_naming_the_folder(tmp_path):
    folder = tmp_path / "weights-only"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "generation_config.json"):
        shutil.copy(TINY_MODEL / name, folder / name)
    dm = JsonlChatSFTDataModule(files=[str(ASSETS / "data" / "chat_sft" / "train.jsonl")], tokenizer_path=str(folder))
    with pytest.raises(FileNotFoundError, match="holds no tokenizer") as info:
        dm.setup("fit")
    assert str(folder) in str(info.value) and "no training samples" not in str(info.value)


def test_a_checkout_relative_model_path_run_from_another_folder_fails_at_once(tmp_path, monkeypatch):
    """Issue 35 item 15: `assets/tiny-qwen3` from another folder looked like a hub id: ~58 s of hub retries."""
    import time

    import pytest

    from mimesis_pl.model_paths import CHECKOUT, check_model_path

    monkeypatch.chdir(tmp_path)
    started = time.perf_counter()
    with pytest.raises(FileNotFoundError) as err:
        check_model_path("assets/tiny-qwen3", "model.init_args.model_path")
    assert time.perf_counter() - started < 1.0
    assert str(err.value) == (
        f"model.init_args.model_path: no folder 'assets/tiny-qwen3' in the working folder {tmp_path}; it is a "
        f"folder of the checkout {CHECKOUT}: run from there or give {CHECKOUT / 'assets/tiny-qwen3'}"
    )
    assert check_model_path("Qwen/Qwen3-0.6B", "model_path") == "Qwen/Qwen3-0.6B"  # a hub id stays one
