"""SGLangEngine: the CPU-side pieces (request and result mapping, weight chunking, import error),
and a GPU test that runs it for real where SGLang and CUDA are present.
"""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
import torch

from mimesis_pl.rollout.engines import SamplingParams
from mimesis_pl.rollout.engines.sglang import _chunks, _sglang_params, _to_result

HAS_SGLANG = importlib.util.find_spec("sglang") is not None


def test_sampling_params_map_to_sglang_fields():
    params = SamplingParams(max_new_tokens=7, temperature=0.8, top_p=0.9, top_k=-1, stop_token_ids=(2, 3), seed=4)
    assert _sglang_params(params) == {
        "max_new_tokens": 7,
        "temperature": 0.8,
        "top_p": 0.9,
        "top_k": -1,
        "stop_token_ids": [2, 3],
        "ignore_eos": True,
        "sampling_seed": 4,
    }


def test_sglang_output_becomes_a_generation_result():
    # The shape of one item of Engine.generate(input_ids=..., return_logprob=True) with skip_tokenizer_init.
    output = {
        "output_ids": [11, 12, 2],
        "meta_info": {
            "finish_reason": {"type": "stop", "matched": 2},
            "output_token_logprobs": [(-0.1, 11, None), (-0.2, 12, None), (-0.3, 2, None)],
        },
    }
    result = _to_result(output, SamplingParams(max_new_tokens=8, stop_token_ids=(2,)))
    assert (result.token_ids, result.logprobs, result.finish_reason) == ([11, 12, 2], [-0.1, -0.2, -0.3], "stop")
    output["meta_info"]["finish_reason"] = {"type": "abort", "message": "out of memory"}
    with pytest.raises(RuntimeError, match="abort"):
        _to_result(output, SamplingParams(max_new_tokens=8))


def test_weights_are_sent_in_bounded_chunks():
    tensors = [(f"w{i}", torch.zeros(256)) for i in range(5)]  # 1 KiB each
    chunks = _chunks(tensors, max_bytes=2048)
    assert [[name for name, _ in chunk] for chunk in chunks] == [["w0", "w1"], ["w2", "w3"], ["w4"]]
    assert len(_chunks([("big", torch.zeros(4096))], max_bytes=10)) == 1  # one oversized tensor still goes


@pytest.mark.skipif(HAS_SGLANG, reason="sglang is installed here")
def test_without_sglang_the_error_says_how_to_install_it():
    from mimesis_pl.rollout.engines import SGLangEngine

    with pytest.raises(
        ImportError, match=r"SGLangEngine needs SGLang.*pip install 'mimesis-pl\[sglang\]' on a CUDA machine"
    ):
        SGLangEngine("assets/tiny-qwen3")


@pytest.mark.gpu
def test_sglang_greedy_matches_hf_and_follows_weight_updates(tiny_model_path, tiny_tokenizer):
    if not (HAS_SGLANG and torch.cuda.is_available()):
        pytest.skip("needs SGLang and a CUDA device")
    from transformers import AutoModelForCausalLM

    from mimesis_pl.chat import ChatRenderer
    from mimesis_pl.rollout.engines import HFEngine, SGLangEngine, SGLangEngineSettings

    prompts = [
        ChatRenderer(tiny_tokenizer).prompt_ids([{"role": "user", "content": q}]) for q in ("Hi", "Book a table")
    ]
    greedy = SamplingParams(max_new_tokens=24, temperature=0.0)

    def run(engine):
        async def main():
            return await asyncio.gather(*[engine.generate(p, greedy) for p in prompts])

        return asyncio.run(main())

    hf_model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32).cuda()
    settings = SGLangEngineSettings(
        dtype="float32", mem_fraction_static=0.2, engine_kwargs={"disable_cuda_graph": True}
    )
    engine = SGLangEngine(tiny_model_path, settings)
    try:
        for s, h in zip(run(engine), run(HFEngine(hf_model, tiny_tokenizer))):
            assert s.token_ids == h.token_ids
            assert s.logprobs == pytest.approx(h.logprobs, abs=1e-3)
        torch.manual_seed(0)
        with torch.no_grad():
            for parameter in hf_model.parameters():
                parameter.add_(0.05 * torch.randn_like(parameter))
        engine.update_weights(hf_model)
        assert [r.token_ids for r in run(engine)] == [r.token_ids for r in run(HFEngine(hf_model, tiny_tokenizer))]
    finally:
        engine.close()
