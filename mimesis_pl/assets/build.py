"""Build the tiny tokenizer and tiny Qwen3-style models that tests and the embedded default use.

No weights can be downloaded on our machines, so everything a test loads with
``from_pretrained(path)`` is made here, deterministically: a byte-level BPE tokenizer trained on
:func:`generate_corpus`, our own chat template, and randomly initialised (seeded) Qwen3 models with
``head_dim=32`` and untied embeddings (vLLM's CPU attention needs head_dim ≥ 32; tied embeddings go
stale on a vLLM reload-from-folder).

    python -m mimesis_pl.assets build --out assets        # or: mimesis-pl assets build
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from .corpus import generate_corpus
from .samples import write_samples

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Tags the model writes as text: decoded verbatim (not "special"), but always single tokens.
TEXT_TAGS = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
# Qwen-style split: contractions, letter runs, single digits, punctuation runs, newlines, spaces.
PRETOKENIZE_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


@dataclass(frozen=True)
class TinyModelSpec:
    """Shape of one tiny Qwen3-style causal LM."""

    name: str
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    num_key_value_heads: int = 1
    head_dim: int = 32
    max_position_embeddings: int = 4096
    seed: int = 0


TINY_MODELS = {
    "tiny-qwen3": TinyModelSpec("tiny-qwen3"),
    "small-qwen3": TinyModelSpec(
        "small-qwen3", hidden_size=128, intermediate_size=256, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2,
    ),
}


def chat_template_text() -> str:
    return resources.files("mimesis_pl.chat").joinpath("templates/chatml.jinja").read_text(encoding="utf-8")


def train_tokenizer(vocab_size: int = 2048, n_docs: int = 4000, seed: int = 0):
    """Train the byte-level BPE tokenizer and wrap it as a transformers tokenizer."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(generate_corpus(n_docs=n_docs, seed=seed), trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TEXT_TAGS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=32768,
        chat_template=chat_template_text(),
        clean_up_tokenization_spaces=False,
    )


def build_model(spec: TinyModelSpec, tokenizer):
    """A randomly initialised Qwen3ForCausalLM of ``spec``'s shape (seeded, float32)."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    vocab = -(-len(tokenizer) // 64) * 64  # round up: kernels like multiples of 64
    eos_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = Qwen3Config(
        vocab_size=vocab,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        attention_dropout=0.0,
    )
    config.dtype = torch.float32
    torch.manual_seed(spec.seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id, do_sample=True)
    return model


def build_all(out: str | Path, models: tuple[str, ...] = ("tiny-qwen3",)) -> list[Path]:
    """Write one HF model folder per name in ``models`` and the sample data under ``out``."""
    out = Path(out)
    tokenizer = train_tokenizer()
    written = []
    for name in models:
        if name not in TINY_MODELS:
            raise ValueError(f"unknown tiny model {name!r}; known: {sorted(TINY_MODELS)}")
        spec = TINY_MODELS[name]
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        tokenizer.save_pretrained(folder)
        build_model(spec, tokenizer).save_pretrained(folder)
        (folder / "mimesis_spec.json").write_text(json.dumps(asdict(spec), indent=2) + "\n")
        written.append(folder)
    written.extend(write_samples(out))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mimesis-pl assets", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="train the tokenizer, write the tiny model folders and sample data")
    b.add_argument("--out", default="assets", help="folder to write into (default: assets)")
    b.add_argument("--models", nargs="+", default=["tiny-qwen3"], choices=sorted(TINY_MODELS))
    args = parser.parse_args(argv)
    for folder in build_all(args.out, tuple(args.models)):
        print(f"wrote {folder}")
    return 0
