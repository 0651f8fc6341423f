"""``mimesis-pl data show``: print what a configured DataModule trains on, token-exactly."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

_GREEN, _DIM, _RESET = "\033[32m", "\033[2m", "\033[0m"


def segments(tokenizer: Any, input_ids: list[int], loss_mask: list[int]) -> list[dict[str, Any]]:
    """Consecutive runs of tokens with the same mask value, decoded: ``{"text", "trained"}``."""
    out: list[dict[str, Any]] = []
    start = 0
    for i in range(1, len(input_ids) + 1):
        if i == len(input_ids) or bool(loss_mask[i]) != bool(loss_mask[start]):
            out.append({"text": tokenizer.decode(input_ids[start:i]), "trained": bool(loss_mask[start])})
            start = i
    return out


def format_segments(segs: list[dict[str, Any]], colour: bool) -> str:
    if colour:
        return "".join((_GREEN if s["trained"] else _DIM) + s["text"] + _RESET for s in segs)
    return "".join(f"[[{s['text']}]]" if s["trained"] else s["text"] for s in segs)


def load_datamodule(config_paths: list[str]):
    """Instantiate only the ``data`` section of LightningCLI config(s); bind the model's tokenizer."""
    import lightning.pytorch as pl
    from jsonargparse import ArgumentParser

    merged: dict[str, Any] = {}
    for path in config_paths:
        with open(path, encoding="utf-8") as handle:
            loaded = yaml.safe_load(handle) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: expected a YAML mapping at the top level")
        merged.update(loaded)
    if "data" not in merged:
        raise ValueError(f"{config_paths}: no 'data' section")
    parser = ArgumentParser(exit_on_error=False)
    parser.add_subclass_arguments(pl.LightningDataModule, "data")
    cfg = parser.parse_object({"data": merged["data"]})
    datamodule = parser.instantiate_classes(cfg).data
    model_path = ((merged.get("model") or {}).get("init_args") or {}).get("model_path")
    if hasattr(datamodule, "connect") and getattr(datamodule, "tokenizer_path", None) is None:
        datamodule.connect(model_path=model_path)
    return datamodule


def main(argv: list[str] | None = None) -> int:
    show = argparse.ArgumentParser(prog="mimesis-pl data show", description="Render N samples with the trained spans marked.")
    show.add_argument("--config", action="append", required=True, help="LightningCLI YAML (repeatable)")
    show.add_argument("--n", type=int, default=3, help="number of samples (default 3)")
    show.add_argument("--json", action="store_true", help="print JSON: per sample a list of {text, trained}")
    show.add_argument("--colour", choices=["auto", "always", "never"], default="auto")
    show.add_argument("--chat-template", default=None,
                      help="render with this template instead of the config's: a name shipped in "
                           "mimesis_pl/chat/templates/ (qwen3, qwen3_5, qwen2_5, llama3, chatml) or a .jinja path")
    args = show.parse_args(argv)

    if args.chat_template is not None:
        from ..chat import load_chat_template

        load_chat_template(args.chat_template)  # a wrong name is an error before anything loads
    datamodule = load_datamodule(args.config)
    if args.chat_template is not None and hasattr(datamodule, "chat_template"):
        datamodule.chat_template = args.chat_template  # read when the tokenizer loads, in setup
    if not hasattr(datamodule, "preview"):
        print(
            f"mimesis-pl data show: {type(datamodule).__name__} has no token-level samples to show "
            "(it yields prompts for rollouts); use it with an SFT DataModule config",
            file=sys.stderr,
        )
        return 2
    datamodule.setup("fit")
    samples = datamodule.preview(args.n)
    tokenizer = datamodule.tokenizer
    if args.json:
        payload = [
            {"sample_id": s["sample_id"], "segments": segments(tokenizer, s["input_ids"], s["loss_mask"])} for s in samples
        ]
        json.dump(payload, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return 0
    colour = args.colour == "always" or (args.colour == "auto" and sys.stdout.isatty())
    legend = "trained tokens in green" if colour else "trained tokens inside [[ ]]"
    print(f"# {type(datamodule).__name__}: {len(samples)} sample(s); {legend}")
    for s in samples:
        trained = sum(s["loss_mask"])
        print(f"\n=== {s['sample_id']} — {len(s['input_ids'])} tokens, {trained} trained ===")
        print(format_segments(segments(tokenizer, s["input_ids"], s["loss_mask"]), colour))
    return 0
