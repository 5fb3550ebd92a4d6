"""A ninth hostile campaign, over the readers of the session before it (InternVL's remote-code
checkpoints and kin, MiniCPM-V / Idefics3 / Phi-3-vision / Phi-4-multimodal, the omni thinkers,
DeepSeek-VL2, tie_word_embeddings on a wrapper or its text config, the quantised towers,
LongRoPE): valid configs mutated by tests/data/hostile_configs/mutate_configs.py under
KVMUT_SET=9 and swept by sweep_configs.py (their README: how many drawn, found, fixed). Each
finding is kept as the one edit of a tests/data config that shows it (the draw that found it in
the comment, ``seed:index``; "sweep" for sweep_configs.py's runs, "lie" for a wrong-typed value
sized as the unmutated config): `kvcli config` refuses it in one line naming the file and the
key, exit code 2, where it gave a traceback or sized what vLLM cannot load."""

from __future__ import annotations

import json

import pytest
from hostile_edits import DATA, POOL, at, config_refuses, mutated, replay_refuses, top
from test_hostile_options import runner

from kvcli.app import app

WC = "weights_census/"
OMNI = WC + "mm_omni/qwen2.5-omni-3b.config.json"
PHI4 = WC + "mm_minicpm_idefics_phi/phi-4-multimodal-instruct.config.json"
PHI3 = WC + "mm_minicpm_idefics_phi/phi-3.5-vision-instruct.config.json"
NVLM = WC + "internvl_chat/tiny-nvlm-d-5-heads.config.json"
CT = WC + "quant_towers/tiny-internvl-chat-ct-w4a16-ignore-tower.config.json"
TIE = ("expected true or false, got {}: transformers' config classes refuse anything else, so "
       "vLLM cannot load the model")
OBJECT = ("must be an object (or null), got {}: transformers' config class refuses it, so vLLM "
          "cannot load the model")
NAMES = "expected a list of module names, got [1]"

CASES = [
    # 91:2337, 91:172 (and 6 more draws): a dict among the architectures looked up in the omni
    # table before they were checked (TypeError: unhashable type)
    (OMNI, top("architectures", [{"a": 1}]), "architectures",
     "must be a list of architecture names, got [{'a': 1}]"),
    # sweep 2004-2012: Phi-4-multimodal's embd_layer of the wrong type (AttributeError)
    (PHI4, top("embd_layer", "x"), "embd_layer", "must be an object, got 'x'"),
    (PHI4, at("audio_processor", "config", "relative_attention_bias_args", value=[1]),
     "audio_processor.config.relative_attention_bias_args", "must be an object, got [1]"),
    # lie: a processor vLLM's AudioEmbedding cannot build (NotImplementedError) was uncounted
    # with a warning
    (PHI4, top("audio_processor", "x"), "audio_processor",
     "must be an object, got 'x': vLLM's Phi-4-multimodal builds its audio encoder from it"),
    (PHI4, at("audio_processor", "name", value="x"), "audio_processor.name",
     "expected \"cascades\", got 'x': vLLM's Phi-4-multimodal builds no other audio encoder"),
    # sweep 727: NVLM-D's mlp1 width looked up with no default (KeyError)
    (NVLM, at("llm_config", "intermediate_size", value=None), "llm_config.intermediate_size",
     "expected an integer >= 1, got None"),
    # lies (91:0 and the sweep's leads): tie_word_embeddings {"a": 1} / "x" read as true, 0 as
    # false, where transformers 5.20.2 refuses the config
    (NVLM, top("tie_word_embeddings", {"a": 1}), "tie_word_embeddings", TIE.format("{'a': 1}")),
    (WC + "mm_minicpm_idefics_phi/idefics3-8b-llama3.config.json",
     at("text_config", "tie_word_embeddings", value="x"), "text_config.tie_word_embeddings",
     TIE.format("'x'")),
    (OMNI, at("thinker_config", "text_config", "tie_word_embeddings", value=0),
     "thinker_config.text_config.tie_word_embeddings", TIE.format("0")),
    # lie (the sweep's lead): a norm vLLM's NORM2FN has not, sized as an RMSNorm
    (NVLM, at("vision_config", "norm_type", value="x"), "vision_config.norm_type",
     "expected \"layer_norm\" or \"rms_norm\", got 'x': vLLM's InternViT builds no other norm"),
    # a text config of the wrong type was "missing 'num_hidden_layers'", a key it does not name
    (WC + "llava_towers/pixtral-12b-hf.config.json", top("text_config", "x"), "text_config",
     OBJECT.format("'x'")),
    (WC + "mm_omni/deepseek_vl2/deepseek-vl2-tiny.config.json", top("language_config", [1]),
     "language_config", "must be an object, got [1]: vLLM builds the language model from it"),
    # sweep (on the branch) 1702: the thinker's text model_type looked up unhashed (TypeError)
    (OMNI, at("thinker_config", "text_config", "model_type", value=[1]),
     "thinker_config.text_config.model_type", "must be a string, got [1]"),
    # lie (quiet_lies 92:2516): a vision_config vLLM's DeepseekVLV2Config cannot build from
    (WC + "mm_omni/deepseek_vl2/deepseek-vl2.config.json", top("vision_config", [1]),
     "vision_config", OBJECT.format("[1]")),
    # sweep (on the branch) 2706-2729: openPangu (no class defaults) without an MLA head dim
    # added None to an int (TypeError)
    (WC + "openpangu/openpangu-ultra-moe-718b.config.json", top("qk_nope_head_dim", None),
     "qk_nope_head_dim",
     "missing 'qk_nope_head_dim', needed to size the KV cache (model_type 'pangu_ultra_moe')"),
    # the thinker's keys named where the file has them (it said 'audio_config.d_model')
    (OMNI, at("thinker_config", "audio_config", "d_model", value="x"),
     "thinker_config.audio_config.d_model", "expected an integer >= 1, got 'x'"),
    # probe: a compressed-tensors group of 0 divided the columns (ZeroDivisionError)
    (CT, at("quantization_config", "config_groups", "group_0", "weights", "group_size", value=0),
     "quantization_config.config_groups.group_0.weights.group_size",
     "expected -1 or an integer >= 1, got 0"),
    # lies: a number among the names vLLM tests `in` a module path (a TypeError there), matched
    # as "1"
    (WC + "quant_towers/tiny-internvl-chat-awq.config.json",
     at("quantization_config", "modules_to_not_convert", value=[1]),
     "quantization_config.modules_to_not_convert", NAMES),
    (WC + "quant_towers/tiny-internvl-chat-modelopt-fp8.config.json",
     at("quantization_config", "ignore", value=[1]), "quantization_config.ignore", NAMES),
    # lies (the sweep's leads): LongRoPE's factors and short length read whatever they held
    (PHI3, at("rope_scaling", "short_factor", value="x"), "rope_scaling",
     "expected a list of numbers for its short_factor, got 'x'"),
    (PHI3, top("original_max_position_embeddings", "x"), "original_max_position_embeddings",
     "original_max_position_embeddings 'x': not a length vLLM can run at"),
    # lie (the sweep's lead): Phi3HDImageEmbedding asserts both flags, calls .get on embd_layer
    (PHI3, at("embd_layer", "use_hd_transform", value=False), "embd_layer.use_hd_transform",
     "got False: vLLM's Phi3V asserts use_hd_transform and with_learnable_separator"),
]


@pytest.mark.parametrize("base, edit, field, message", CASES)
def test_a_finding_is_refused_in_one_line(tmp_path, base, edit, field, message):
    config_refuses(tmp_path, base, edit, field, message)


@pytest.mark.parametrize("base, edit, field, message", CASES[:3])
def test_replay_refuses_a_finding_the_same(tmp_path, base, edit, field, message):
    replay_refuses(tmp_path, base, edit, field, message)


def _blocks(path: str, *options: str) -> int:
    res = runner.invoke(app, ["config", "--model-config", path, *POOL, "--json", *options])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["num_blocks"]


def test_nvlm_d_without_an_intermediate_size_takes_its_class_default(tmp_path):
    # sweep 726: absent, LlamaConfig's 11,008 (the language model's reading) widens mlp1 too
    assert json.loads((DATA / NVLM).read_text())["llm_config"]["model_type"] == "llama"
    left_out = mutated(tmp_path, NVLM, lambda cfg: cfg["llm_config"].pop("intermediate_size"))
    (tmp_path / "given").mkdir()
    given = mutated(tmp_path / "given", NVLM,
                    at("llm_config", "intermediate_size", value=11008))
    assert _blocks(left_out) == _blocks(given)


@pytest.mark.parametrize("base, edit", [
    # a sample of the draws that passed before and after (seed 91)
    (NVLM, top("tie_word_embeddings", None)),               # (null: absent, as before)
    (OMNI, at("thinker_config", "text_config", "tie_word_embeddings", value=False)),
    (PHI4, at("audio_processor", "config", "nemo_conv_settings", value=None)),
    (WC + "mm_omni/deepseek_vl2/deepseek-vl2-tiny.config.json",
     at("projector_config", "projector_type", value="linear")),
])
def test_a_valid_edit_still_sizes(tmp_path, base, edit):
    assert _blocks(mutated(tmp_path, base, edit)) > 0
