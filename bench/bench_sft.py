"""SFT training throughput on CPU: our masked, chunked-logits loss vs HF's ``labels=`` loss, side by side.

    python bench/bench_sft.py [--model assets/tiny-qwen3] [--batch 8] [--seq 256] [--steps 20]

Both run the same model, batch and AdamW step; the ratio is ours / HF (higher is better).
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers import AutoModelForCausalLM

from mimesis_pl.modules.token_ops import model_token_logprobs


def run(model_path: str, batch: int, seq: int, steps: int, ours: bool) -> float:
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_path).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    vocab = model.config.vocab_size
    ids = torch.randint(3, vocab, (batch, seq))
    attn = torch.ones_like(ids)
    loss_mask = (torch.rand(batch, seq) < 0.4).long()
    labels = ids.masked_fill(loss_mask == 0, -100)
    tokens = 0
    start = None
    for step in range(steps + 3):
        if step == 3:
            start, tokens = time.perf_counter(), 0  # 3 warm-up steps
        if ours:
            logprobs = model_token_logprobs(model, ids, attn, chunk_size=1024)
            mask = loss_mask[:, 1:].float()
            loss = -(logprobs * mask).sum() / mask.sum()
        else:
            loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        tokens += ids.numel()
    return tokens / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="assets/tiny-qwen3")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    hf = run(args.model, args.batch, args.seq, args.steps, ours=False)
    ours = run(args.model, args.batch, args.seq, args.steps, ours=True)
    print(f"batch {args.batch} x seq {args.seq}, {args.steps} steps, {torch.get_num_threads()} threads")
    print(f"HF labels= loss : {hf:10.0f} tok/s")
    print(f"mimesis-pl loss : {ours:10.0f} tok/s   ratio {ours / hf:.2f}x")


if __name__ == "__main__":
    main()
