"""A wrapper's AWQ / GPTQ / compressed-tensors / ModelOpt list naming one text layer's module,
as vLLM 0.33 matches it (tests/data/weights_census/quant_wrappers/: README.md). vLLM matches
each list at its own paths, ``language_model.model.layers.N`` in LLaVA, Mistral 3, Qwen2.5-VL
and Gemma 3; kvcli matched AWQ's, GPTQ's and compressed-tensors' at its text model's
``model.layers.N``: a skip in the checkpoint's or vLLM's names missed (the down_proj counted
packed), a GPTQ rule or compressed-tensors name spelt bare hit where vLLM's misses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes

HERE = Path(__file__).resolve().parent / "data" / "weights_census" / "quant_wrappers"
CASES = json.loads((HERE / "answers.json").read_text())["cases"]
SIZED = [(name, tp) for name, case in CASES.items() for tp in case["tp"]]


def _bytes(name: str, tp: int) -> int:
    cfg = json.loads((HERE / f"{name}.config.json").read_text())
    return estimate_weights_bytes(read_hf_config(cfg, source=f"{name}.config.json"), tp)


def test_every_case_was_recorded_at_tp_1_and_2() -> None:
    assert sorted(CASES) == sorted(p.name.removesuffix(".config.json")
                                   for p in HERE.glob("*.config.json"))
    assert all(sorted(c["tp"]) == ["1", "2"] for c in CASES.values())
    assert len(SIZED) == 144


@pytest.mark.parametrize(("name", "tp"), SIZED)
def test_every_rank_holds_vllms_bytes(name: str, tp: str) -> None:
    ranks = [sum(r["param_bytes_by_dtype"].values()) for r in CASES[name]["tp"][tp]]
    assert ranks == [_bytes(name, int(tp))] * int(tp)


@pytest.mark.parametrize(("name", "tp", "total"), [
    # (AWQ: every spelling skips, the bare one as a substring of vLLM's path)
    ("tiny-llava-clip-awq-skip-mlp-hf", 1, 34_950_144),
    ("tiny-llava-clip-awq-skip-mlp-bare", 2, 17_649_152),
    ("qwen2.5-vl-7b-awq-skip-tower-skip-mlp-vllm", 2, 3_514_060_544),
    ("gemma-3-mm-awq-skip-mlp-hf", 1, 18_435_072),
    # (GPTQ's rule is re.match-ed, unrenamed: only vLLM's own spelling skips)
    ("tiny-llava-clip-gptq-skip-mlp-vllm", 1, 34_950_144),
    ("tiny-llava-clip-gptq-skip-mlp-bare", 1, 34_756_096),
    ("qwen2.5-vl-7b-gptq-skip-mlp-hf", 2, 2_964_332_032),
    ("qwen2.5-vl-7b-gptq-skip-mlp-vllm", 2, 3_014_590_464),
    # (compressed-tensors' names must equal vLLM's path once renamed: LLaVA's bare misses,
    # Mistral 3's mapper renames a bare model. and it skips)
    ("tiny-llava-clip-ct-w4a16-skip-mlp-hf", 2, 17_643_892),
    ("tiny-llava-clip-ct-w4a16-skip-mlp-bare", 2, 17_546_628),
    ("tiny-mistral3-ct-w4a16-skip-mlp-bare", 1, 4_513_652),
    # (ModelOpt: every spelling excludes it, as before)
    ("tiny-mistral3-modelopt-fp8-skip-mlp-bare", 2, 4_791_688),
    # (Gemma 3's SigLIP packed with the language model: kvcli counted all of it unquantised)
    ("gemma-3-mm-ct-w4a16-skip-mlp-hf", 1, 18_390_164),
    ("gemma-3-mm-awq-tower-packed-skip-mlp-hf", 2, 7_863_296),
    ("gemma-3-mm-gptq-tower-packed-skip-mlp-bare", 1, 12_225_536),
    ("gemma-3-mm-ct-w4a16-tower-packed-skip-mlp-bare", 2, 7_056_676),
    # (the lists naming what is packed, layer 1's down_proj alone: GPTQ's
    # modules_in_block_to_quantize renamed, then matched as substrings: every spelling packs
    # it; compressed-tensors' targets renamed, then equal to vLLM's path: LLaVA's and Gemma
    # 3's bare spelling names nothing, every linear in the model dtype; Mistral 3's mapper
    # renames a bare model. and it packs)
    ("tiny-llava-clip-gptq-only-mlp-bare", 1, 39_025_152),
    ("qwen2.5-vl-7b-gptq-only-mlp-hf", 2, 8_243_786_496),
    ("tiny-llava-clip-ct-w4a16-only-mlp-hf", 1, 39_024_692),
    ("tiny-llava-clip-ct-w4a16-only-mlp-bare", 1, 39_219_236),
    ("tiny-mistral3-ct-w4a16-only-mlp-bare", 2, 5_284_148),
    ("gemma-3-mm-ct-w4a16-tower-packed-only-mlp-vllm", 1, 33_954_868),
    ("gemma-3-mm-ct-w4a16-tower-packed-only-mlp-bare", 1, 35_511_332)])
def test_the_skipped_down_proj_is_sized_as_vllm_builds_it(name: str, tp: int,
                                                          total: int) -> None:
    assert sum(CASES[name]["tp"][str(tp)][0]["param_bytes_by_dtype"].values()) == total
    assert _bytes(name, tp) == total
