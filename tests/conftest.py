"""Shared fixtures: the tiny local model/tokenizer and paths (no downloads, ever)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "assets"
TINY_MODEL = ASSETS / "tiny-qwen3"
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def tiny_model_path() -> Path:
    return TINY_MODEL


@pytest.fixture(scope="session")
def tiny_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(TINY_MODEL)
