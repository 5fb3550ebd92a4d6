"""An eighth hostile campaign, over the newest readers (the multimodal towers, sparse MLA,
Zamba2, Llama 4 MoE, K2-Horizon, LongCat, class-default experts, the pre-Llama / LFM2 / DBRX
module lists, quantised towers and routers): valid configs mutated by
tests/data/hostile_configs/mutate_configs.py under KVMUT_SET=8 and swept by sweep_configs.py
(their README: how many drawn, found, fixed). Each finding is kept as the one edit of a
tests/data config that shows it (the draw that found it in the comment, ``seed:index``, or
"lie" for quiet_lies.py's leads): `kvcli config` refuses it in one line naming the file and
the key, exit code 2, where it gave a traceback or sized a wrong-typed value as the default."""

from __future__ import annotations

import json

import pytest
from hostile_edits import DATA, POOL, at, config_refuses, mutated, replay_refuses, top
from test_hostile_options import runner

from kvcli.app import app

WC = "weights_census/"
K2 = WC + "k2_horizon/k2-horizon-dense-layer.config.json"
LFM2_AWQ = WC + "family_lists/lfm2-awq-skip-conv.config.json"
DSV32 = WC + "quant2/deepseek-v3.2-l4-fp8-skip-wq-b.config.json"
QWEN25_VL = "qwen_vl/qwen2.5-vl-7b-instruct.config.json"
DBRX_FP8 = WC + "family_lists/dbrx-fp8-skip-wqkv.config.json"


def _rope(key, value):
    return at("rope_scaling", key, value=value)


VLLM_FP8 = "vLLM's Fp8Config refuses it"
SCHEMES, TWO = 'expected "static" or "dynamic"', "expected two integers >= 1"
BLOCKWISE = "block-wise fp8 takes only a dynamic activation scheme"
K2_RANGE = ("expected an even integer from 2 to the head dim 128, got {} (vLLM's partial NeoX "
            "RoPE asserts it)")
TOWERS = "vLLM builds a CLIP, SigLIP or Pixtral vision tower"

CASES = [
    # 83:144, 82:10: int("x") in the RoPE cache's width (ValueError)
    (K2, top("rope_head_dim", "x"), "rope_head_dim", K2_RANGE.format("'x'")),
    # (lie: wider than the head was sized as a wider cache; vLLM asserts R <= D)
    (K2, top("rope_head_dim", 130), "rope_head_dim", K2_RANGE.format("130")),
    # 81:868: an unhashable dict looked up in the towers' table (TypeError)
    (WC + "llava_towers/pixtral-12b-hf.config.json", at("vision_config", "model_type",
                                                         value={"a": 1}),
     "vision_config.model_type", f"{{'a': 1}}: {TOWERS} for LlavaForConditionalGeneration"),
    # lie (85:108's lead): a wrapper's model_type of the wrong type skipped for its
    # text_config's (transformers cannot load the config)
    (WC + "llava_towers/pixtral-12b-hf.config.json", top("model_type", [1]), "model_type",
     "must be a string, got [1]"),
    # 82:846: a dict multiplied by the head count (TypeError)
    ("zamba2/zamba2-2.7b-style.config.json", top("mamba_headdim", {}), "mamba_headdim",
     "expected an integer >= 1, got {}"),
    ("zamba2/zamba2-2.7b-style.config.json", top("attention_head_dim", "x"),
     "attention_head_dim", "expected an integer >= 1, got 'x'"),
    # 85:455: int(NaN) (ValueError); lie: 1.5 was a group of 1
    (LFM2_AWQ, at("quantization_config", "group_size", value=float("nan")),
     "quantization_config.group_size", "expected -1 or an integer >= 1, got nan"),
    (LFM2_AWQ, at("quantization_config", "group_size", value=1.5),
     "quantization_config.group_size", "expected -1 or an integer >= 1, got 1.5"),
    # 85:1733: group 0.5 divided by (ZeroDivisionError); sweep: a number iterated (TypeError)
    (WC + "quant2/deepseek-v3.2-l4-awq.config.json",
     at("quantization_config", "group_size", value=0.5), "quantization_config.group_size",
     "expected -1 or an integer >= 1, got 0.5"),
    (WC + "quant2/qwen3-moe-awq-skip-gate.config.json",
     at("quantization_config", "modules_to_not_convert", value=1.5),
     "quantization_config.modules_to_not_convert", "expected a list of module names, got 1.5"),
    # lie: an empty object read as absent, the float16 model sized at bfloat16
    (LFM2_AWQ, top("torch_dtype", {}), "torch_dtype",
     'expected a dtype name such as "bfloat16", got {}'),
    # lie (85:236's lead): a wrapper's own, skipped for its text_config's
    (WC + "llava_towers/pixtral-12b-hf.config.json", top("torch_dtype", [1]), "torch_dtype",
     'expected a dtype name such as "bfloat16", got [1]'),
    # lie (82:929's lead): a bool read as the class's three deepstack levels
    (WC + "fp8/qwen3-vl-8b-fp8.config.json",
     at("vision_config", "deepstack_visual_indexes", value=True),
     "vision_config.deepstack_visual_indexes", "expected a list of layer indices, got True"),
    # lies (84:258, 82:807): RoPE parameters of the wrong type read as none
    (DSV32, top("rope_scaling", "yarn"), "rope_scaling",
     "expected an object of RoPE parameters, got 'yarn'"),
    (DSV32, _rope("factor", "40"), "rope_scaling",
     "expected a number for its factor, got '40'"),
    (QWEN25_VL, _rope("mrope_section", "x"), "rope_scaling",
     "expected a list of integers for its mrope_section, got 'x'"),
    # lies (82:495): fp8 keys Fp8Config refuses, read as dynamic / per-tensor
    (DBRX_FP8, at("quantization_config", "activation_scheme", value=[]),
     "quantization_config.activation_scheme", f'{SCHEMES}, got []: {VLLM_FP8}'),
    (DBRX_FP8, at("quantization_config", "weight_block_size", value=[128]),
     "quantization_config.weight_block_size", f"{TWO}, got [128]: {VLLM_FP8}"),
    (DBRX_FP8, at("quantization_config", "activation_scheme", value="static"),
     "quantization_config.activation_scheme", f"{BLOCKWISE}, got 'static': {VLLM_FP8}"),
]


@pytest.mark.parametrize("base, edit, field, message", CASES)
def test_a_finding_is_refused_in_one_line(tmp_path, base, edit, field, message):
    config_refuses(tmp_path, base, edit, field, message)


@pytest.mark.parametrize("base, edit, field, message", CASES[:4])
def test_replay_refuses_a_finding_the_same(tmp_path, base, edit, field, message):
    replay_refuses(tmp_path, base, edit, field, message)


def _blocks(path: str, *options: str) -> int:
    res = runner.invoke(app, ["config", "--model-config", path, *POOL, "--json", *options])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["num_blocks"]


def test_zamba2_without_layers_block_type_takes_the_class_default(tmp_path):
    # sweep: deleted or null, the kinds read the key again (KeyError); Zamba2Config's default
    base = "zamba2/tiny-zamba2-three-blocks.config.json"
    for value in (None, "delete"):
        def edit(cfg, value=value):
            if value is None:
                cfg["layers_block_type"] = None
            else:
                del cfg["layers_block_type"]
        assert _blocks(mutated(tmp_path, base, edit)) > 0


def test_a_null_vision_key_is_its_default_in_the_buffers_too(tmp_path):
    # 82:761: the tower read hidden_size null as its default, the rotary buffer int(None)
    base = WC + "quant2/qwen3-vl-moe-fp8-block.config.json"
    path = mutated(tmp_path, base, at("vision_config", "hidden_size", value=None))
    want = _blocks(str(DATA / base))
    v = json.loads((DATA / base).read_text())["vision_config"]
    assert v["hidden_size"] == 1152     # (Qwen3-VL's class default: null sizes the same)
    assert _blocks(path) == want
