"""SFT loss step: our fused, chunked head (as ``CausalLMSFT`` runs it by default) vs HF's ``labels=`` loss.

    python bench/bench_sft.py [--vocab 151936] [--hidden 256] [--layers 2] [--batch 2] [--seq 2048]
        [--trained-fraction 1.0] [--rounds 3] [--variants hf sft logprobs] [--device cpu]

Each measurement is a fresh process (so peak memory is per variant) that builds a Qwen3-style model
from a config, warms up on a short batch, then times ``--steps`` forward + backward passes (plus a
fused AdamW step with ``--optim``). Variants, run in alternating rounds (see ``rounds.py``):

* ``hf``: ``model(input_ids, attention_mask, labels=...).loss`` — full ``[B, T, V]`` logits.
* ``sft``: ``CausalLMSFT._nll`` with the module's default ``loss_chunk_size`` (sized from the vocabulary).
* ``logprobs``: ``model_token_logprobs`` (the per-token path RL uses) + a masked mean.
* any of these with ``_gc``: the same with the model's gradient checkpointing on.

Printed: per-round ratios vs ``hf`` of step time and of peak memory (peak RSS on CPU, peak
allocated on CUDA), and the same for the growth of memory over the process's state after warm-up.
The issue's goal on the default CPU case: ``sft/hf`` time ≤ 1.15 at peak memory ≤ 0.55.
"""

from __future__ import annotations

import argparse
import json
import time

from rounds import Rounds, current_rss_bytes, peak_rss_bytes, run_child


def build(args):
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        intermediate_size=args.intermediate or 3 * args.hidden,
        num_attention_heads=args.heads,
        num_key_value_heads=max(1, args.heads // 2),
        head_dim=args.head_dim,
        tie_word_embeddings=args.tie,
        max_position_embeddings=max(4096, args.seq),
        attn_implementation="sdpa",
    )
    with torch.device(args.device):  # initialise on the device: a 0.6B model initialises slowly on CPU
        model = AutoModelForCausalLM.from_config(config).train()
    if args.gradient_checkpointing or args.child.endswith("_gc"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def make_batch(args, seq: int):
    import torch

    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, args.vocab, (args.batch, seq), generator=g)
    attn = torch.ones_like(ids)
    loss_mask = (torch.rand(args.batch, seq, generator=g) < args.trained_fraction).long()
    loss_mask[:, -1] = 1  # at least one target per row
    batch = {"input_ids": ids, "attention_mask": attn, "loss_mask": loss_mask}
    return {k: v.to(args.device) for k, v in batch.items()}


def step_fn(variant: str, model, args):
    import torch

    from mimesis_pl.modules import CausalLMSFT
    from mimesis_pl.rl.token_ops import model_token_logprobs

    variant = variant.removesuffix("_gc")  # the suffix only switches gradient checkpointing on
    if variant == "hf":

        def loss_of(batch):
            labels = batch["input_ids"].masked_fill(batch["loss_mask"] == 0, -100)
            return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=labels).loss
    elif variant == "sft":
        module = CausalLMSFT("unused")  # its defaults, including loss_chunk_size
        module.model = model

        def loss_of(batch):
            return module._nll(batch)[0]
    elif variant == "logprobs":

        def loss_of(batch):
            target = batch["loss_mask"][:, 1:]
            logprobs = model_token_logprobs(
                model, batch["input_ids"], batch["attention_mask"], target_mask=target
            ).logprobs
            mask = target.float()
            return -(logprobs * mask).sum() / mask.sum()
    else:
        raise ValueError(f"unknown variant {variant!r}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=args.device == "cuda") if args.optim else None

    def step(batch):
        model.zero_grad(set_to_none=True)
        with torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.bf16):
            loss = loss_of(batch)
        loss.backward()
        if optimizer is not None:
            optimizer.step()
        return float(loss.detach())

    return step


def child(args) -> dict:
    """One variant in this process: warm up, then time ``--steps`` steps; report time and memory."""
    import torch

    cuda = args.device == "cuda"
    model = build(args)
    step = step_fn(args.child, model, args)
    step(make_batch(args, min(64, args.seq)))  # thread pools, kernels, optimizer state
    batch = make_batch(args, args.seq)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        base = current_rss_bytes()
    times, loss = [], None
    for _ in range(args.steps):
        start = time.perf_counter()
        loss = step(batch)
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    peak = torch.cuda.max_memory_allocated() if cuda else peak_rss_bytes()
    return {
        "variant": args.child,
        "seconds": min(times),
        "peak_bytes": peak,
        "growth_bytes": peak - base,
        "loss": loss,
        "tokens": args.batch * args.seq,
    }


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vocab", type=int, default=151_936)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--intermediate", type=int, default=None)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--tie", action="store_true", help="tie input and output embeddings (as Qwen3-0.6B)")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--trained-fraction", type=float, default=1.0, help="share of positions with loss_mask 1")
    p.add_argument("--steps", type=int, default=1, help="timed steps per process (the fastest counts)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--variants", nargs="+", default=["hf", "sft", "logprobs"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (fp32 master weights)")
    p.add_argument("--optim", action="store_true", help="include an AdamW step in the timed step")
    p.add_argument("--gradient-checkpointing", action="store_true")
    p.add_argument("--json", default=None, help="also write the per-round results to this file")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return p


def child_argv(args, variant: str) -> list[str]:
    argv = [__file__, "--child", variant]
    for name in (
        "vocab",
        "hidden",
        "layers",
        "heads",
        "head_dim",
        "batch",
        "seq",
        "trained_fraction",
        "steps",
        "device",
    ):
        argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    if args.intermediate:
        argv += ["--intermediate", str(args.intermediate)]
    for flag in ("tie", "bf16", "optim", "gradient_checkpointing"):
        if getattr(args, flag):
            argv.append(f"--{flag.replace('_', '-')}")
    return argv


def compare(args) -> dict:
    rounds = Rounds(args.variants, args.rounds)
    losses: dict[str, float] = {}
    for variant in rounds:
        out = run_child(child_argv(args, variant))
        rounds.record(
            variant, seconds=out["seconds"], peak_gib=out["peak_bytes"] / 2**30, growth_gib=out["growth_bytes"] / 2**30
        )
        losses[variant] = out["loss"]
        print(
            f"round {rounds.round}: {variant:>9} {out['seconds']:8.2f} s  peak {out['peak_bytes'] / 2**30:6.2f} GiB  "
            f"growth {out['growth_bytes'] / 2**30:6.2f} GiB  loss {out['loss']:.6f}",
            flush=True,
        )
    print(
        f"B{args.batch} x T{args.seq}, vocab {args.vocab}, hidden {args.hidden}, {args.layers} layers, "
        f"trained fraction {args.trained_fraction}, device {args.device}"
    )
    for measure in ("seconds", "peak_gib", "growth_gib"):
        rounds.print_table(measure)
    result = {"args": vars(args), "losses": losses, **rounds.summary(), "ratios": {}}
    for variant in args.variants:
        if variant != "hf" and "hf" in args.variants:
            for measure in ("seconds", "peak_gib", "growth_gib"):
                result["ratios"][f"{variant}/hf {measure}"] = rounds.print_ratio(variant, "hf", measure)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle)
    return result


def main() -> None:
    args = parser().parse_args()
    if args.child:
        print(json.dumps(child(args)))
    else:
        compare(args)


if __name__ == "__main__":
    main()
