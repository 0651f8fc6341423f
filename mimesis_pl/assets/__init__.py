"""Deterministic builders for the tiny local tokenizer and models (no downloads)."""

from .build import TINY_MODELS, TinyModelSpec, build_all, build_model, chat_template_text, train_tokenizer

__all__ = ["TINY_MODELS", "TinyModelSpec", "build_all", "build_model", "chat_template_text", "train_tokenizer"]
