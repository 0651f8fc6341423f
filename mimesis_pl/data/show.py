"""``mimesis-pl data show``: print what a configured DataModule trains on, token-exactly."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

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


def load_datamodule(config_paths: list[str], overrides: list[str] | None = None):
    """The DataModule exactly as ``mimesis-pl fit`` builds it (same parser, same merge of stacked
    ``--config`` files and ``--data.…`` overrides), without loading the model or building a trainer."""
    from ..cli_base import DataOnlyCLI

    args = [arg for path in config_paths for arg in ("--config", path)] + list(overrides or [])
    return DataOnlyCLI(args=args, run=False).datamodule


def main(argv: list[str] | None = None) -> int:
    show = argparse.ArgumentParser(
        prog="mimesis-pl data show",
        description="Render N samples with the trained spans marked. Any other argument is passed to LightningCLI "
        "(e.g. --data.init_args.batch_size 2), before or after these.",
    )
    show.add_argument("--config", action="append", required=True, help="LightningCLI YAML (repeatable)")
    show.add_argument("--n", type=int, default=3, help="number of samples (default 3)")
    show.add_argument("--json", action="store_true", help="print JSON: per sample a list of {text, trained}")
    show.add_argument("--colour", choices=["auto", "always", "never"], default="auto")
    show.add_argument(
        "--chat-template",
        default=None,
        help="render with this template instead of the config's: a name shipped in "
        "mimesis_pl/chat/templates/ (qwen3, qwen3_5, qwen2_5, llama3, chatml) or a .jinja path",
    )
    # Further LightningCLI arguments (e.g. --data.init_args.batch_size 2) are whatever this parser does not know,
    # in any order with its own: a positional catch-all swallowed a later --n after an override's value.
    args, overrides = show.parse_known_args(argv)

    if args.chat_template is not None:
        from ..chat import load_chat_template

        load_chat_template(args.chat_template)  # a wrong name is an error before anything loads
    datamodule = load_datamodule(args.config, overrides)
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
            {"sample_id": s["sample_id"], "segments": segments(tokenizer, s["input_ids"], s["loss_mask"])}
            for s in samples
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
