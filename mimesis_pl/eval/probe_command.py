"""``mimesis-pl probe MODEL_DIR --contexts FILE``: the exact decision probe once, on any HF checkpoint folder.

    mimesis-pl probe runs/<job>/version_0/hf/final --contexts data/cue/probe.jsonl --out probe.json
    mimesis-pl probe assets/agent-persuade-coached --contexts probe.jsonl --enable-thinking true

Prints the means (p_correct, p_correct_norm, n) as one JSON line; ``--out`` also writes every row's result.
Render the contexts as the policy's rollouts did: same ``--enable-thinking`` (and ``--chat-template``) as
its job's ``rollout.enable_thinking`` (and ``policy.chat_template``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

DTYPES = ("float32", "bfloat16", "float16")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mimesis-pl probe", description=__doc__.split("\n\n")[0])
    p.add_argument("model_dir", help="a HF checkpoint folder (weights, tokenizer and chat template)")
    p.add_argument("--contexts", required=True, help="the probe-contexts JSONL file")
    p.add_argument("--out", default=None, help="write the full result (every row's log-probs) to this JSON file")
    p.add_argument(
        "--chat-template", default=None, help="a shipped template name or .jinja path (default: the folder's)"
    )
    p.add_argument(
        "--enable-thinking",
        choices=["true", "false"],
        default=None,
        help="the template's enable_thinking (default: unset)",
    )
    p.add_argument("--batch-size", type=int, default=8, help="sequences (context x candidate) per forward (default: 8)")
    p.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    p.add_argument("--dtype", choices=DTYPES, default="float32", help="weights' dtype (default: float32)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import torch

    from ..causal_lm import load_causal_lm
    from ..chat import load_tokenizer
    from ..chat.render import ChatRenderer
    from .probe import ProbeContextError, probe_decisions, read_probe_contexts

    if args.batch_size < 1:
        print(f"mimesis-pl probe: error: --batch-size must be >= 1, got {args.batch_size}", file=sys.stderr)
        return 2
    try:
        rows = read_probe_contexts(args.contexts)
    except ProbeContextError as err:
        print(f"mimesis-pl probe: error: {err}", file=sys.stderr)
        return 2
    if not Path(args.model_dir).is_dir():
        print(f"mimesis-pl probe: error: {args.model_dir} is not a folder (a HF checkpoint folder)", file=sys.stderr)
        return 2
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    tokenizer = load_tokenizer(args.model_dir, args.chat_template)
    kwargs = {} if args.enable_thinking is None else {"enable_thinking": args.enable_thinking == "true"}
    renderer = ChatRenderer(tokenizer, **kwargs)
    model = load_causal_lm(args.model_dir, dtype=args.dtype).to(device)
    try:
        result = probe_decisions(model, renderer, rows, batch_size=args.batch_size)
    except ProbeContextError as err:
        print(f"mimesis-pl probe: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result.summary()))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result.to_dict(), indent=1) + "\n", encoding="utf-8")
    return 0
