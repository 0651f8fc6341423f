"""SFT data at scale: rendering everything at set-up (``streaming: false``) vs the lazy stream.

    python bench/bench_sft_data.py [--rows 20000 1000000] [--eager-max-rows 100000] [--rounds 2]

Writes synthetic JSONL chat files (cached under ``--cache``) of each size in ``--rows``; then, for
each size and variant, a fresh process builds ``JsonlChatSFTDataModule`` with the tiny tokenizer,
runs ``setup`` and takes ``--batches`` training batches. Reported per run: resident memory growth
(peak RSS minus RSS before set-up), start-up time (set-up + first batch) and rows/s (rows rendered
or delivered per second over set-up and the batches). Eager runs above ``--eager-max-rows`` are
skipped (rendering 1M rows up front takes many minutes and several GiB: the point of the stream).
Variants run in alternating rounds (``rounds.py``); ratios streaming / eager are per round.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from rounds import Rounds, current_rss_bytes, peak_rss_bytes, run_child

REPO = Path(__file__).resolve().parents[1]
WORDS = [
    "the",
    "user",
    "asks",
    "about",
    "a",
    "flight",
    "to",
    "paris",
    "on",
    "friday",
    "and",
    "the",
    "agent",
    "searches",
    "options",
    "with",
    "care",
    "refund",
    "kettle",
    "parcel",
    "table",
    "booking",
    "late",
    "train",
    "password",
    "hotel",
    "room",
    "bill",
]


def write_rows(path: Path, rows: int) -> Path:
    if path.exists():
        return path
    rng = random.Random(0)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as out:
        for k in range(rows):
            user = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
            reply = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60)))
            out.write(
                json.dumps(
                    {"messages": [{"role": "user", "content": f"{k}: {user}"}, {"role": "assistant", "content": reply}]}
                )
                + "\n"
            )
    tmp.rename(path)
    return path


def child(args) -> dict:
    import itertools

    from mimesis_pl.data.chat_sft import JsonlChatSFTDataModule

    base = current_rss_bytes()
    start = time.perf_counter()
    dm = JsonlChatSFTDataModule(
        files=[args.file],
        tokenizer_path=str(REPO / "assets/tiny-qwen3"),
        batch_size=8,
        streaming=args.child == "streaming",
        shuffle_window=args.window,
    )
    dm.setup("fit")
    loader = dm.train_dataloader()
    batches = iter(loader)
    first = next(batches)
    startup = time.perf_counter() - start
    rows = first["input_ids"].shape[0]
    for batch in itertools.islice(batches, args.batches - 1):
        rows += batch["input_ids"].shape[0]
    total = time.perf_counter() - start
    rendered = rows if args.child == "streaming" else len(dm.train_samples) + rows
    return {
        "startup_s": startup,
        "rows_per_s": rendered / total,
        "growth_mib": (peak_rss_bytes() - base) / 2**20,
        "rows_rendered": rendered,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[20_000, 1_000_000])
    p.add_argument("--eager-max-rows", type=int, default=100_000)
    p.add_argument("--batches", type=int, default=1024)
    p.add_argument("--window", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--cache", default="/tmp/mimesis-bench-sft-data")
    p.add_argument("--child", default=None)
    p.add_argument("--file", default=None)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    Path(args.cache).mkdir(parents=True, exist_ok=True)
    files = {n: write_rows(Path(args.cache) / f"rows_{n}.jsonl", n) for n in args.rows}
    labels = [
        f"{v}@{n}" for n in args.rows for v in ("eager", "streaming") if v == "streaming" or n <= args.eager_max_rows
    ]
    rounds = Rounds(labels, args.rounds)
    for label in rounds:
        variant, n = label.split("@")
        out = run_child(
            [
                __file__,
                "--child",
                variant,
                "--file",
                str(files[int(n)]),
                "--batches",
                str(args.batches),
                "--window",
                str(args.window),
            ]
        )
        rounds.record(label, **{k: v for k, v in out.items()})
        print(
            f"round {rounds.round}: {label:>18} start-up {out['startup_s']:8.2f} s  rows/s {out['rows_per_s']:8.0f}  "
            f"RSS growth {out['growth_mib']:8.1f} MiB",
            flush=True,
        )
    for measure, fmt in (("growth_mib", "{:.1f}"), ("startup_s", "{:.2f}"), ("rows_per_s", "{:.0f}")):
        rounds.print_table(measure, fmt)
    for n in args.rows:
        if n <= args.eager_max_rows:
            for measure in ("growth_mib", "startup_s"):
                rounds.print_ratio(f"streaming@{n}", f"eager@{n}", measure)
    if len(args.rows) > 1:
        small, large = min(args.rows), max(args.rows)
        rounds.print_ratio(f"streaming@{large}", f"streaming@{small}", "growth_mib", better="1.0 = flat in size")


if __name__ == "__main__":
    main()
