"""Bad numbers in a config fail at construction, naming the config key."""

from __future__ import annotations

import pytest

from mimesis_pl.data.chat_sft import JsonlChatSFTDataModule
from mimesis_pl.data.prompts import GymPromptDataModule
from mimesis_pl.modules.settings import OptimSettings


@pytest.mark.parametrize(
    "kwargs, key",
    [
        ({"lr": -1}, "optim.lr"),
        ({"lr": 0}, "optim.lr"),
        ({"warmup_ratio": 1.5}, "optim.warmup_ratio"),
        ({"betas": (0.9, 1.2)}, "optim.betas"),
        ({"min_lr_ratio": -0.1}, "optim.min_lr_ratio"),
    ],
)
def test_optim_settings_name_the_bad_key(kwargs, key):
    with pytest.raises(ValueError, match=rf"model\.init_args\.{key} must be"):
        OptimSettings(**kwargs)


def test_batch_size_zero_names_the_key():
    with pytest.raises(ValueError, match=r"data\.init_args\.batch_size must be >= 1, got 0"):
        JsonlChatSFTDataModule(files=["unused.jsonl"], batch_size=0)
    with pytest.raises(ValueError, match=r"data\.init_args\.max_tokens_per_batch must be >= 1"):
        JsonlChatSFTDataModule(files=["unused.jsonl"], max_tokens_per_batch=0)
    with pytest.raises(ValueError, match=r"data\.init_args\.batch_size must be >= 1, got 0"):
        GymPromptDataModule(files=["unused.parquet"], batch_size=0)
