"""The prepared GPU check: one script, ≤ 8 minutes on one H200, one JSONL of results.

    PYTHONPATH=. python bench/gpu_check.py --out gpu_check.jsonl          # on the GPU machine
    PYTHONPATH=. python bench/gpu_check.py --dry-run --out /tmp/dry.jsonl  # tiny shapes on CPU (tests)

Needs torch, transformers, lightning, peft, torchmetrics, tensorboard, pyarrow, plus the package's
small pure-Python dependencies the GPU machine lacks (jsonargparse[signatures] for the CLI, aiohttp
for the shim). Run it with ``PYTHONPATH=.`` rather than installing the package, whose torch pin would
otherwise pull a download; carry the missing wheels and pass ``--wheels DIR`` (installed with
``pip install --no-index --find-links DIR``, nothing else). Prepare them where PyPI is reachable with
the GPU machine's Python version, e.g.::

    pip download -d gpu_wheels --only-binary=:all: --python-version 3.12 \
        --platform manylinux2014_x86_64 'jsonargparse[signatures]>=4.53' 'aiohttp>=3.10'

Sections, each in its own process with its own time limit (a crash or OOM in one does not lose the others):

* ``sft``: ``bench/bench_sft.py`` at T = 16,384 on a Qwen3-0.6B-shaped model (bf16 autocast, fp32
  master weights, fused AdamW step included): plain HF ``labels=`` vs ``CausalLMSFT``'s default loss,
  with and without gradient checkpointing, in alternating rounds — tok/s and peak allocated memory.
* ``grpo`` / ``csd``: one ``AgentGRPO`` and one ``AgentCSD`` step through ``mimesis-pl fit`` with the HF
  engine on the GPU (scripted users behind the real shim on loopback; a random 0.6B-shaped model).
* ``fsdp1``: one ``CausalLMSFT`` step under ``ModelParallelStrategy`` (FSDP2) on one device.
* ``csd_teacher``: one CSD step (teacher forward + ``sdar`` loss + backward) on the real-sized shape in train
  mode with gradient checkpointing on, the ``prefix_cache`` teacher against the ``packed`` teacher of the same
  weights (max |difference| per coached token; docs/decisions.md A60), with peak memory.
* ``async`` (opt-in, ``--sections async``): 3 ``AgentGRPO`` steps at ``rollout.max_staleness`` 0 and then 1 with
  the HF engine on the GPU (k = 1 generates on a second copy of the policy while the update runs): fit seconds,
  the last step's ``async/staleness_max`` and ``time/wait_rollout_s`` (docs/decisions.md A91).

Each section appends one JSON line: ``{"section", "ok", "seconds", ...results or "error"}``; the
first line describes the machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
TOKENIZER_FROM = REPO / "assets" / "tiny-agent"

# Qwen3-0.6B's shape; the dry run keeps the structure at toy sizes.
SHAPES = {
    "0.6b": {
        "hidden": 1024,
        "intermediate": 3072,
        "layers": 28,
        "heads": 16,
        "kv_heads": 8,
        "head_dim": 128,
        "vocab": 151_936,
        "tie": True,
    },
    "tiny": {
        "hidden": 64,
        "intermediate": 128,
        "layers": 2,
        "heads": 2,
        "kv_heads": 1,
        "head_dim": 32,
        "vocab": 2048,
        "tie": True,
    },
}
SECTION_LIMITS_S = {"sft": 230, "grpo": 75, "csd": 90, "fsdp1": 60, "csd_teacher": 60}  # + ~25 s model: < 9 min
SECTION_LIMITS_S["async"] = 150  # opt-in (--sections async): not in the default 8-minute list


# import name -> what pip installs for it
NEEDED = {
    "jsonargparse": "jsonargparse[signatures]",
    "docstring_parser": "docstring-parser",
    "typeshed_client": "typeshed-client",
    "aiohttp": "aiohttp",
    "yaml": "pyyaml",
    "jinja2": "jinja2",
}


def missing_modules() -> list[str]:
    import importlib.util

    return [name for name in NEEDED if importlib.util.find_spec(name) is None]


def ensure_dependencies(wheels: str | None) -> dict:
    """Install what is missing from the carried wheel folder (never from an index)."""
    missing = missing_modules()
    record = {"section": "dependencies", "missing_before": missing}
    if missing and wheels:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--no-index",
                "--find-links",
                wheels,
                *(NEEDED[m] for m in missing),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        record["pip_tail"] = (done.stdout + done.stderr)[-1500:]
        missing = missing_modules()
    record.update(ok=not missing, missing=missing)
    return record


def build_model_folder(shape: dict, out: Path, device: str) -> Path:
    """A randomly initialised Qwen3 of ``shape`` with the tiny agent's tokenizer and chat template."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    out.mkdir(parents=True, exist_ok=True)
    for f in TOKENIZER_FROM.iterdir():
        if f.name not in ("model.safetensors", "config.json", "mimesis_spec.json"):
            shutil.copy(f, out / f.name)
    tiny = json.loads((TOKENIZER_FROM / "config.json").read_text())
    config = Qwen3Config(
        vocab_size=shape["vocab"],
        hidden_size=shape["hidden"],
        intermediate_size=shape["intermediate"],
        num_hidden_layers=shape["layers"],
        num_attention_heads=shape["heads"],
        num_key_value_heads=shape["kv_heads"],
        head_dim=shape["head_dim"],
        tie_word_embeddings=shape["tie"],
        max_position_embeddings=40_960,
        eos_token_id=tiny["eos_token_id"],
        pad_token_id=tiny["pad_token_id"],
        bos_token_id=tiny.get("bos_token_id"),
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(out)
    return out


def cli_config(name: str, model_dir: Path, work: Path, gpu: bool) -> Path:
    """A tiny config of ours, pointed at ``model_dir`` and sized for one quick step; written to ``work``."""
    import yaml

    cfg = yaml.safe_load((REPO / "configs" / "tiny" / f"{name}.yaml").read_text())
    trainer = cfg["trainer"]
    trainer.update(
        accelerator="gpu" if gpu else "cpu",
        devices=1,
        precision="bf16-mixed" if gpu else "32-true",
        max_steps=1,
        limit_val_batches=0,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
    )
    trainer["logger"] = {
        "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
        "init_args": {"save_dir": str(work / "runs"), "name": name},
    }
    trainer["callbacks"] = []  # no checkpoints or exports: the RL stages belong to the module
    init_args = cfg["model"]["init_args"]
    if "rollout" in init_args:
        rollout = {"n_samples": 2, "max_new_tokens": 32, "max_length": 2048}
        max_turns = 2 if gpu else 1  # the dry run only proves the path: one short turn
        if not gpu:
            rollout.update(max_new_tokens=4)
        init_args["rollout"].update(rollout)
        init_args["rollout"].setdefault("episode", {})["max_turns"] = max_turns
    if "policy" in init_args:
        init_args["policy"]["model_path"] = str(model_dir)
    else:
        init_args["model_path"] = str(model_dir)
    if "batch_size" in cfg["data"]["init_args"]:
        cfg["data"]["init_args"]["batch_size"] = 2
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run_fit(config: Path, extra: list[str], gpu: bool) -> dict:
    """``mimesis-pl fit --config config`` in this process; the logged metrics and peak memory."""
    import torch

    from mimesis_pl.cli import MimesisCLI

    if gpu:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    cli = MimesisCLI(args=["fit", "--config", str(config), *extra])
    metrics = {k: float(v) for k, v in cli.trainer.callback_metrics.items() if getattr(v, "numel", lambda: 1)() == 1}
    out = {"fit_seconds": time.perf_counter() - start, "global_step": cli.trainer.global_step, "metrics": metrics}
    if gpu:
        out["peak_allocated_gib"] = torch.cuda.max_memory_allocated() / 2**30
    return out


def section(name: str, args) -> dict:
    """Run one section in this process and return its results."""
    work = Path(args.work)
    model_dir = work / "model"
    if name == "sft":
        shape = SHAPES[args.shape]
        argv = [
            str(BENCH / "bench_sft.py"),
            "--vocab",
            str(shape["vocab"]),
            "--hidden",
            str(shape["hidden"]),
            "--intermediate",
            str(shape["intermediate"]),
            "--layers",
            str(shape["layers"]),
            "--heads",
            str(shape["heads"]),
            "--head-dim",
            str(shape["head_dim"]),
            "--batch",
            "1",
            "--seq",
            str(args.seq),
            "--steps",
            str(args.sft_steps),
            "--rounds",
            str(args.sft_rounds),
            "--device",
            args.device,
            "--optim",
            "--variants",
            *args.sft_variants,
            "--json",
            str(work / "sft.json"),
        ]
        if shape["tie"]:
            argv.append("--tie")
        if args.device == "cuda":
            argv.append("--bf16")
        done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-4000:])
        result = json.loads((work / "sft.json").read_text())
        tokens = args.seq
        result["tok_per_s_median"] = {
            v: tokens / sorted(vals["seconds"])[len(vals["seconds"]) // 2] for v, vals in result["values"].items()
        }
        result["stdout_tail"] = done.stdout[-2500:]
        return result
    gpu = args.device == "cuda"
    if name in ("grpo", "csd"):
        return run_fit(cli_config(f"agent_{name}", model_dir, work, gpu), [], gpu)
    if name == "fsdp1":
        strategy = {
            "class_path": "lightning.pytorch.strategies.ModelParallelStrategy",
            "init_args": {"data_parallel_size": 1, "tensor_parallel_size": 1},
        }
        if not gpu:
            strategy["init_args"]["process_group_backend"] = "gloo"
        return run_fit(
            cli_config("chat_sft", model_dir, work, gpu), [f"--trainer.strategy={json.dumps(strategy)}"], gpu
        )
    if name == "csd_teacher":
        return csd_teacher_step(model_dir, 4096 if gpu else 96, gpu)
    if name == "async":
        config = cli_config("agent_grpo", model_dir, work, gpu)
        runs = {
            f"k{k}": run_fit(config, [f"--model.init_args.rollout.max_staleness={k}", "--trainer.max_steps=3"], gpu)
            for k in (0, 1)
        }
        return {**runs, "fit_seconds k0/k1": runs["k0"]["fit_seconds"] / runs["k1"]["fit_seconds"]}
    raise ValueError(f"unknown section {name!r}")


def csd_teacher_step(model_dir: Path, length: int, gpu: bool) -> dict:
    """One CSD step under gradient checkpointing; the prefix-cache teacher vs the packed teacher."""
    import torch

    from mimesis_pl.causal_lm import load_causal_lm
    from mimesis_pl.rl.losses import csd_loss
    from mimesis_pl.rl.teacher import build_teacher_rows, pack_teacher_rows
    from mimesis_pl.rl.teacher_forward import teacher_logprobs, teacher_logprobs_prefix_cached
    from mimesis_pl.rl.token_ops import model_token_logprobs
    from mimesis_pl.spans import TurnSpan

    device = "cuda" if gpu else "cpu"
    model = load_causal_lm(str(model_dir), dtype=None, gradient_checkpointing=True).to(device)
    model.train()
    vocab = model.config.vocab_size
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (length,), generator=gen)
    q = length // 4  # three turns in the last three quarters, each: 2 header tokens, then sampled tokens
    spans = [TurnSpan(k * q, k * q + 2, (k + 1) * q) for k in (1, 2, 3)]
    note = torch.randint(0, vocab, (24,), generator=gen).tolist()
    rows = build_teacher_rows(ids, spans, {0: "n", 1: "n", 2: "n"}, lambda _: note, length + 64, prompt_len=0)
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    with torch.autocast(device, dtype=torch.bfloat16, enabled=gpu):
        cached = teacher_logprobs_prefix_cached(model, ids, spans, [rows])[0]
        packed = teacher_logprobs(model, pack_teacher_rows([rows], length, 0))[0]
        student = model_token_logprobs(model, ids[None].to(device)).logprobs  # [1, L-1], with gradient
        mask = rows.teacher_mask[1:].to(device)[None].float()
        loss, metrics = csd_loss(student, cached[1:][None].to(student.dtype), mask)
    loss.backward()
    coached = rows.teacher_mask.to(device)
    grad = torch.sqrt(sum((p.grad.float() ** 2).sum() for p in model.parameters() if p.grad is not None))
    out = {
        "length": length,
        "coached_tokens": int(coached.sum()),
        "max_abs_diff_prefix_cache_vs_packed": float((cached - packed)[coached].abs().max()),
        "csd_loss": float(loss.detach()),
        "gate_mean": float(metrics["gate_mean"]),
        "grad_norm": float(grad),
        "step_seconds": time.perf_counter() - start,
    }
    if gpu:
        out["peak_allocated_gib"] = torch.cuda.max_memory_allocated() / 2**30
    return out


def machine(args) -> dict:
    import torch
    import transformers

    info = {
        "section": "machine",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "dry_run": args.dry_run,
        "shape": args.shape,
        "seq": args.seq,
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_memory_gib"] = torch.cuda.get_device_properties(0).total_memory / 2**30
    return info


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="gpu_check.jsonl")
    p.add_argument("--dry-run", action="store_true", help="tiny shapes on CPU, a few seconds per section")
    p.add_argument("--sections", nargs="+", default=["sft", "grpo", "csd", "fsdp1", "csd_teacher"])
    p.add_argument("--seq", type=int, default=None, help="SFT sequence length (default 16384; 128 in a dry run)")
    p.add_argument("--sft-rounds", type=int, default=None)
    p.add_argument("--sft-steps", type=int, default=None)
    p.add_argument("--sft-variants", nargs="+", default=None)
    p.add_argument("--wheels", default=None, help="folder of carried wheels for missing pure-Python dependencies")
    p.add_argument(
        "--in-process",
        action="store_true",
        help="run the sections in this process (the dry run's default: fewer imports, no time limits)",
    )
    p.add_argument("--section", default=None, help=argparse.SUPPRESS)  # run one section (child process)
    p.add_argument("--work", default=None, help=argparse.SUPPRESS)
    p.add_argument("--device", default=None, help=argparse.SUPPRESS)
    p.add_argument("--shape", default=None, help=argparse.SUPPRESS)
    return p


def resolve(args) -> None:
    dry = args.dry_run
    args.device = args.device or ("cpu" if dry else "cuda")
    args.shape = args.shape or ("tiny" if dry else "0.6b")
    args.seq = args.seq or (128 if dry else 16_384)
    args.sft_rounds = args.sft_rounds or (1 if dry else 2)
    args.sft_steps = args.sft_steps or (1 if dry else 3)
    args.sft_variants = args.sft_variants or (["hf", "sft"] if dry else ["hf", "sft", "hf_gc", "sft_gc"])


def child_argv(args, name: str) -> list[str]:
    argv = [
        __file__,
        "--section",
        name,
        "--work",
        args.work,
        "--device",
        args.device,
        "--shape",
        args.shape,
        "--seq",
        str(args.seq),
        "--sft-rounds",
        str(args.sft_rounds),
        "--sft-steps",
        str(args.sft_steps),
        "--sft-variants",
        *args.sft_variants,
    ]
    return argv + (["--dry-run"] if args.dry_run else [])


def main() -> int:
    args = parser().parse_args()
    resolve(args)
    if args.section:  # child: one section, its result as the last stdout line
        print(json.dumps(section(args.section, args)))
        return 0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp, out.open("a") as sink:
        args.work = tmp
        sink.write(json.dumps(machine(args)) + "\n")
        deps = ensure_dependencies(args.wheels)
        sink.write(json.dumps(deps) + "\n")
        sink.flush()
        if not deps["ok"]:
            print(f"missing modules {deps['missing']}: pass --wheels DIR (see the docstring)", file=sys.stderr)
            return 2
        start = time.perf_counter()
        build_model_folder(SHAPES[args.shape], Path(tmp) / "model", args.device)
        sink.write(json.dumps({"section": "build_model", "ok": True, "seconds": time.perf_counter() - start}) + "\n")
        for name in args.sections:
            start = time.perf_counter()
            record = {"section": name}
            try:
                if args.in_process or args.dry_run:
                    record.update(ok=True, **section(name, args))
                else:
                    done = subprocess.run(
                        [sys.executable, *child_argv(args, name)],
                        capture_output=True,
                        text=True,
                        timeout=SECTION_LIMITS_S[name],
                        check=False,
                    )
                    if done.returncode != 0:
                        raise RuntimeError(f"exit {done.returncode}: {done.stderr[-4000:]}")
                    record.update(ok=True, **json.loads(done.stdout.strip().splitlines()[-1]))
            except Exception as err:  # noqa: BLE001 - every failure is recorded, the next section still runs
                failures += 1
                record.update(
                    ok=False, error=f"{type(err).__name__}: {err}"[-4000:], trace=traceback.format_exc()[-2000:]
                )
            record["seconds"] = time.perf_counter() - start
            sink.write(json.dumps(record) + "\n")
            sink.flush()
            print(f"{name}: {'ok' if record['ok'] else 'FAILED'} in {record['seconds']:.0f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
