"""An eleventh hostile campaign, over the readers added the day it ran (the towers of Command A
Vision, Aria, BLIP-2, LightOnOCR, Granite 4 Vision, Ovis, Eagle 2.5, OpenCUA, Kanana-V, the
speech models, the OCR models, the quantised ERNIE-VL / Step3 / Voxtral / Molmo, Step3 on
pipeline stages, the several-module MTP drafts): valid configs mutated by
tests/data/hostile_configs/mutate_configs.py under KVMUT_SET=11, swept key by key and probed by
hand (probes11.txt; their README: how many drawn, found, fixed). Each finding is kept as the one
edit of a tests/data config that shows it (the draw that found it in the comment,
``seed:index``; "probe" a hand-written edit, "sweep" sweep_configs.py's, "lie" a wrong value
sized without a word): `kvcli config` refuses it in one line naming the file and the key, exit
code 2."""

from __future__ import annotations

import json

import pytest
from hostile_edits import (
    DATA,
    POOL,
    at,
    config_refuses,
    mutated,
    replay_refuses,
    sized_report,
    sized_the_same,
    top,
)
from test_hostile_options import runner

from kvcli.app import app

WC = "weights_census/"
ERNIE_VL = WC + "quant_ernie_keye/tiny-ernie-vl-awq-skip-tower.config.json"
DASHENG = WC + "mm_audio2/tiny-midashenglm-layer-scale.config.json"
GLM_ASR = WC + "mm_audio2/tiny-glm-asr-gqa.config.json"
GRANITE4 = WC + "mm_cohere/tiny-granite4-vision.config.json"
ULTRAVOX = WC + "mm_audio2/tiny-ultravox-ln-post.config.json"
AF3 = WC + "mm_audio2/tiny-audio-flamingo-3.config.json"
OVIS25 = WC + "mm_ovis/tiny-ovis2.5-no-pe.config.json"
ACTS = ("expected an activation vLLM 0.33's get_act_fn builds (gelu, gelu_fast, gelu_new, "
        "gelu_pytorch_tanh, relu, relu2, silu, swish, quick_gelu, tanh, sigmoid, xielu), got ")

CASES = [
    # 111:1628 (1e308) / 2340 (inf): ERNIE-VL's vision mlp_ratio made int() fail (OverflowError)
    (ERNIE_VL, at("vision_config", "mlp_ratio", value=float("inf")), "vision_config.mlp_ratio",
     "expected a number > 0 (an MLP below 2^31 wide), got inf"),
    (ERNIE_VL, at("vision_config", "mlp_ratio", value=1e308), "vision_config.mlp_ratio",
     "expected a number > 0 (an MLP below 2^31 wide), got 1e+308"),
    # probe: MiDashengLM's NaN the same (ValueError)
    (DASHENG, at("audio_encoder_config", "mlp_ratio", value=float("nan")),
     "audio_encoder_config.mlp_ratio",
     "expected a number > 0 (an MLP below 2^31 wide), got nan"),
    # probe: GLM-ASR's partial_rotary_factor "x" repeated a string int() failed on; 1e308 made
    # an infinite width (OverflowError)
    (GLM_ASR, at("audio_config", "partial_rotary_factor", value="x"),
     "audio_config.partial_rotary_factor", "expected a number in (0, 1], got 'x'"),
    (GLM_ASR, at("audio_config", "rope_parameters", value={"partial_rotary_factor": 1e308}),
     "audio_config.rope_parameters.partial_rotary_factor",
     "expected a number in (0, 1], got 1e+308"),
    # lie (probe): a rope_parameters vLLM's .get fails on was read as none
    (GLM_ASR, at("audio_config", "rope_parameters", value="x"), "audio_config.rope_parameters",
     "must be an object, got 'x'"),
    # lie (probe): 3 key-value heads beside 8 heads were sized (vLLM's MMEncoderAttention
    # asserts num_heads % num_kv_heads == 0)
    (GLM_ASR, at("audio_config", "num_key_value_heads", value=3),
     "audio_config.num_key_value_heads",
     ("num_attention_heads 8 is not a multiple of it (3): vLLM's encoder attention asserts "
      "num_heads divisible by num_kv_heads")),
    # lie (probe, sweep): entries that are no [vision, text] pair were counted by the list's
    # length (vLLM unpacks each in its __init__)
    (GRANITE4, top("deepstack_layer_map", [1]), "deepstack_layer_map",
     "expected a list of [vision layer, text layer] pairs of integers, got an entry 1"),
    (GRANITE4, top("deepstack_layer_map", [[-2, 1], "x"]), "deepstack_layer_map",
     "expected a list of [vision layer, text layer] pairs of integers, got an entry 'x'"),
    # lie (probe): an activation get_act_fn refuses was sized as a plain projector
    (ULTRAVOX, top("projector_act", "x"), "projector_act", ACTS + "'x'"),
    (ULTRAVOX, top("projector_act", "SWIGLU"), "projector_act", ACTS + "'SWIGLU'"),
    (ULTRAVOX, top("projector_act", None), "projector_act", ACTS + "None"),
    (AF3, top("projector_hidden_act", "x"), "projector_hidden_act", ACTS + "'x'"),
    # lie (probe): Ovis2.5's num_patches "x" was read as the image's patches (vLLM's Siglip2
    # NaViT compares it with 0 whatever preserve_original_pe says)
    (OVIS25, at("vit_config", "num_patches", value="x"), "vit_config.num_patches",
     "expected an integer (<= 0: the image's patches), got 'x'"),
    # 112:1663: Ovis's visual tokenizer model_type a dict looked up in a table (TypeError)
    (WC + "mm_ovis/ovis2-2b.config.json", at("visual_tokenizer_config", "model_type",
                                            value={"a": 1}),
     "visual_tokenizer_config.model_type",
     ("{'a': 1} with a 'aimv2' backbone: vLLM's Ovis builds an aimv2 or a siglip_vision_model "
      "one under its visual tokenizer")),
    # 112:945: Step3's text_config.share_q_dim null reached the fp8 scales' sum (TypeError)
    (WC + "quant_step3/tiny-step3-gptq.config.json",
     at("text_config", "share_q_dim", value=None), "text_config.share_q_dim",
     "missing 'share_q_dim', needed to size the KV cache (model_type 'step3_text')"),
]


@pytest.mark.parametrize("base, edit, field, message", CASES)
def test_a_finding_is_refused_in_one_line(tmp_path, base, edit, field, message):
    config_refuses(tmp_path, base, edit, field, message)


@pytest.mark.parametrize("base, edit, field, message", CASES[:2])
def test_replay_refuses_a_finding_the_same(tmp_path, base, edit, field, message):
    replay_refuses(tmp_path, base, edit, field, message)


def test_get_act_fn_lowers_the_name(tmp_path):
    # (vLLM's get_act_fn lowers it: "GELU" is gelu, a projector as wide as hidden_size)
    sized_the_same(tmp_path, ULTRAVOX, top("projector_act", "GELU"), top("projector_act", "gelu"))


def test_an_empty_rope_parameters_falls_back_as_vllm_does(tmp_path):
    # (vLLM's `if rope_params:` skips an empty one for the config's partial_rotary_factor)
    sized_the_same(tmp_path, GLM_ASR, at("audio_config", "rope_parameters", value={}),
          at("audio_config", "partial_rotary_factor", value=0.5))


@pytest.mark.parametrize("base, edit", [
    # a sample of the edits that passed before and after (seed 111, probes)
    (GRANITE4, top("deepstack_layer_map", [[-2, 1], [-1, 0]])),
    (ULTRAVOX, top("projector_act", "torch.nn.modules.identity")),
    (AF3, top("projector_hidden_act", "quick_gelu")),
    (GLM_ASR, at("audio_config", "partial_rotary_factor", value=1.0)),
    (DASHENG, at("audio_encoder_config", "mlp_ratio", value=1.5)),
    (WC + "mm_ovis/tiny-ovis2.6-naflex.config.json", at("vit_config", "num_patches", value=0)),
    (WC + "mm_audio2/ultravox-v0_5-llama-3_2-1b-inline.config.json",    # 111:720 (the decoder's)
     at("audio_config", "decoder_ffn_dim", value="\u00e9\u202e\u0000")),
    (WC + "mm_cohere/command-a-vision.config.json", top("image_token_id", [1])),    # 111:1146
    (WC + "mm_ocr/tiny-paddleocr-vl.config.json",                         # 111:1257
     top("weight_share_add_bias", -2**31)),
])
def test_a_valid_edit_still_sizes(tmp_path, base, edit):
    assert sized_report(mutated(tmp_path, base, edit))["num_blocks"] > 0


@pytest.mark.parametrize("value, said", [
    # (spec_lines.py: a config line's "2" or true was 'must be >= 0, got '2'', a rule it met)
    ("2", "must be an integer, got '2'"), (True, "must be an integer, got True"),
    (-1, "must be >= 0, got -1"), (1.5, "must be an integer, got 1.5")])
def test_a_config_lines_token_count_names_the_rule_it_breaks(tmp_path, value, said):
    from test_hostile_options import refused

    lines = (DATA / "sched_spec_mtp" / "aseed90106.trace.jsonl").read_text().splitlines()
    head = json.loads(lines[0])
    head["config"].update(spec_method="qwen3_next_mtp", num_speculative_tokens=value)
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    line = f"error: {trace}:1: field 'config.num_speculative_tokens': {said}"
    assert refused(["replay", str(trace)], line) == line


def test_a_tower_of_10_8_layers_is_refused_at_once(tmp_path):
    # (hang, probe: 10^8 layers, below 2^31, listed the towers' linears layer by layer for
    # minutes (Aria, ERNIE-VL, Ovis2.5, Voxtral, PaddleOCR-VL), Kanana-V's RegNet summed its
    # blocks one by one: a tower's layer count is capped as the text model's)
    import time

    start = time.perf_counter()
    for base, edit, field in [
            (WC + "mm_cohere/tiny-aria.config.json",
             at("vision_config", "num_hidden_layers", value=10**8),
             "vision_config.num_hidden_layers"),
            (ERNIE_VL, at("vision_config", "depth", value=10**8), "vision_config.depth"),
            (WC + "mm_ovis/tiny-kanana-v.config.json",
             at("projector_config", "depth", value=10**8), "projector_config.depth")]:
        least = 0 if field == "projector_config.depth" else 1
        config_refuses(tmp_path, base, edit, field,
                       f"expected an integer >= {least} and <= 100,000, got 100000000")
    assert time.perf_counter() - start < 10


@pytest.mark.parametrize("pp", [2, 4])
def test_sparse_mla_on_pipeline_stages_is_sized(pp):
    # (112:2929: DeepSeek-V3.2's indexer caches, 'layers.N.indexer', were int('indexer') when
    # the stages took their layers: a traceback for the unmutated config too; each indexer now
    # goes with its decoder layer. Not compared with vLLM's stages)
    res = runner.invoke(app, ["config", "--model-config",
                              str(DATA / "sparse_mla" / "deepseek-v3.2.config.json"), *POOL,
                              "--tp", "4", "--pp", str(pp), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["num_blocks"] > 0
