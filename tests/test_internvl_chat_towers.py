"""kvcli's weights and buffers for InternVL's remote-code checkpoints (`InternVLChatModel`:
InternVL2_5, InternVL3, InternVL3_5; InternViT-300M and InternViT-6B with mlp1) against vLLM
0.33.0's own class, built on the meta device at TP 1, 2, 4 and 8, every rank, alone and under
the multimodal serving options (tests/data/weights_census/internvl_chat/answers.json, recorded
by record_internvl_chat.py there with the remote-code config class rewritten): the bytes a
rank holds and its buffers, exactly. kvcli refused every such config before ("missing
'num_hidden_layers'": its language model is under llm_config)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mm_serving import vision_rank_bytes
from kvcore.models.weights import estimate_params
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import (
    case_geometry,
    case_mm,
    refused_tps,
    vllms_words,
)

DATA = Path(__file__).parent / "data" / "weights_census" / "internvl_chat"
ALL = json.loads((DATA / "answers.json").read_text())["cases"]
CASES = {n: c for n, c in ALL.items() if "refused" not in c}


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


def _geometry(name: str, *, applied: bool = True):
    return case_geometry(DATA, CASES, name, applied=applied)


def test_the_mistral_llm_case_is_refused_by_vllm() -> None:
    """(its ranks, parameters and coverage: tests/test_tower_censuses.py)"""
    assert set(ALL) - set(CASES) == {"tiny-internvl-mistral-llm"}


REFUSED = refused_tps(CASES)


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """TP 4 and 8 do not divide Qwen2.5-0.5B's 14 heads (InternVL3-1B), nor TP 8 Qwen2.5-7B's
    28 (InternVL3-8B, whatever the options); TP 8 does not divide the tiny tower's 36-wide MLP
    (vLLM: "36 is not divisible by 8"), though its attention would stay whole."""
    assert len(REFUSED) == 8
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_geometry(name, applied=False), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=4096, mm=case_mm(CASES[name]))
    assert e.value.field == "tensor_parallel_size"
    assert "must be divisible by it, as vLLM requires" in e.value.message
    assert e.value.message.endswith(f"got {tp}")
    if "mlp" in name:
        assert "vision tower's MLP is 36 wide" in e.value.message


@pytest.mark.parametrize(("base", "total", "whole", "attention"), [
    # InternViT-300M (24 layers, 16 heads, qkv bias, LayerNorms) and mlp1 onto Qwen2.5-0.5B
    ("internvl3-1b", 308_495_104, 6_333_184, 100_737_024),
    # the same tower onto Qwen2.5-7B's 3,584 (InternVL3-8B: as its Hugging Face format's)
    ("internvl3-8b", 331_552_768, 29_390_848, 100_737_024),
    # InternViT-6B: 45 layers, 25 heads, q/k RMSNorms, no qkv bias; mlp1 onto 8,192
    ("internvl3-78b", 5_708_504_448, 178_328_448, 1_843_200_000),
])
def test_tower_sizes(base: str, total: int, whole: int, attention: int) -> None:
    """The tower's and mlp1's parameters, those whole on every rank, and the attention's
    (whole too where TP does not divide the heads): vLLM's non-language-model parameters."""
    g = read_hf_config(_config(base), name=base)
    assert (g.vision_params, g.vision_whole, g.vision_head_bound[1]) == (total, whole, attention)


def test_internvit_6b_attention_stays_whole_where_tp_does_not_divide_its_25_heads() -> None:
    """vLLM 0.33 builds no dummy heads for this class: at TP 2, 4 and 8 each layer's qkv and
    proj are whole on every rank (InternParallelAttention falls back to tp_size 1) while fc1
    and fc2 split; kvcli split them all before this class was counted."""
    g = read_hf_config(_config("internvl3-78b"), name="internvl3-78b")
    whole, bound = g.vision_whole, g.vision_head_bound[1]
    for tp in (2, 4, 8):
        assert vision_rank_bytes(g, tp) == 2 * (whole + bound + (g.vision_params - whole - bound)
                                                // tp)
    assert vision_rank_bytes(g, 1) == 2 * g.vision_params


def test_the_tower_is_dropped_or_kept_whole_as_vllm_does() -> None:
    """--language-model-only and limits of 0 for image and video drop the tower and mlp1; a
    limit of 0 for images alone does not (video stays at 999); data mode holds it whole."""
    for opts in ("--language-model-only", '--limit-mm-per-prompt {"image":0,"video":0}'):
        assert _geometry(f"internvl3-8b {opts}").vision_params == 0
    assert _geometry('internvl3-8b --limit-mm-per-prompt {"image":0}').vision_params > 0
    g = _geometry("internvl3-78b --mm-encoder-tp-mode data")
    assert vision_rank_bytes(g, 8) == 2 * 5_708_504_448


def test_an_llm_config_its_remote_code_does_not_build_is_refused() -> None:
    """InternVL's configuration_internvl_chat.py picks llm_config's class by its first
    architecture and raises on others (vLLM cannot load the config: as recorded)."""
    assert vllms_words(ALL["tiny-internvl-mistral-llm"]["refused"]) == (
        "Unsupported architecture: MistralForCausalLM")
    with pytest.raises(InputError) as e:
        read_hf_config(_config("tiny-internvl-mistral-llm"), source="c.json")
    assert (e.value.field, e.value.path) == ("llm_config.architectures", "c.json")
    assert str(e.value).startswith("c.json: field 'llm_config.architectures': "
                                   "'MistralForCausalLM': InternVL's remote code")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(("edit", "field", "words"), [
    ({"llm_config": None}, "llm_config", "InternVLChatModel needs its language model's config"),
    ({"llm_config": {"num_hidden_layers": 2}}, "llm_config.architectures", "None: InternVL's"),
    ({"select_layer": -7}, "select_layer", "expected an integer from -6 to 5"),
    ({"select_layer": 6}, "select_layer", "expected an integer from -6 to 5"),
    ({"downsample_ratio": 0}, "downsample_ratio", "expected a number in (0, 1]"),
    ({"vision_config": {"hidden_size": 42, "num_attention_heads": 5}},
     "vision_config.num_attention_heads", "42 (hidden_size) is not divisible by its 5"),
])
def test_bad_internvl_chat_keys_are_refused_in_one_line(edit: dict, field: str,
                                                        words: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**_config("tiny-internvit-6b-like-select-2"), **edit}, source="c.json")
    assert (e.value.field, e.value.path) == (field, "c.json")
    assert words in e.value.message


@pytest.mark.parametrize(("base", "total", "whole", "heads", "attention"), [
    # NVLM-D-72B: InternViT-6B padded to 32 heads (7 dummy), mlp1 through Qwen2-72B's 29,568
    ("nvlm-d-72b", 6_673_389_696, 627_117_696, 32, 2_359_296_000),
    # Skywork-R1V-38B: InternViT-6B-V2_5, mlp1 onto 5,120
    ("skywork-r1v-38b", 5_628_282_240, 98_106_240, 25, 1_843_200_000),
    # H2OVL-Mississippi-2B: InternViT-300M onto Danube2's 2,560
    ("h2ovl-mississippi-2b", 321_064_960, 18_903_040, 16, 100_737_024),
])
def test_kin_tower_sizes(base: str, total: int, whole: int, heads: int, attention: int) -> None:
    g = read_hf_config(_config(base), name=base)
    assert (g.vision_params, g.vision_whole, g.vision_head_bound) == (total, whole,
                                                                      (heads, attention))


def test_nvlm_d_dummy_heads_split_where_tp_divides_them() -> None:
    """nvlm_d.py pads the 5 heads of the tiny tower with 7 dummy ones (12): qkv and proj
    split at TP 2 and 4, whole at TP 8, as vLLM built them."""
    g = _geometry("tiny-nvlm-d-5-heads")
    whole, (heads, bound) = g.vision_whole, g.vision_head_bound
    assert heads == 12
    for tp, extra in ((2, 0), (4, 0), (8, bound)):
        split = g.vision_params - whole - extra
        assert vision_rank_bytes(g, tp) == 2 * (whole + extra + split // tp)


def test_kin_modalities_and_data_mode() -> None:
    """Skywork-R1V marks its tower image only (a limit of 0 for images drops it) and takes no
    data mode (vLLM falls back to weights: the tower split); H2OVL inherits InternVLChatModel's
    image-and-video mark, so {"image": 0} alone keeps its tower."""
    assert _geometry('skywork-r1v-38b --limit-mm-per-prompt {"image":0}').vision_params == 0
    data = _geometry("skywork-r1v-38b --mm-encoder-tp-mode data")
    assert vision_rank_bytes(data, 2) == vision_rank_bytes(_geometry("skywork-r1v-38b"), 2)
    assert _geometry('h2ovl-mississippi-2b --limit-mm-per-prompt {"image":0}').vision_params > 0


@pytest.mark.parametrize(("base", "total"), [
    ("intern-s1-mini", 337_583_104),     # (InternViT-300M, Qwen3-8B's 4,096)
    ("intern-s1", 5_605_735_808),        # (InternViT-6B, Qwen3-235B-A22B's 4,096)
])
def test_interns1_is_counted_as_the_hugging_face_formats_class(base: str, total: int) -> None:
    """vLLM builds InternS1's remote-code checkpoints with interns1.py, as the Hugging Face
    format's InternVLForConditionalGeneration (its attention whole on every rank): warned as
    not counted before."""
    g = read_hf_config(_config(base), name=base)
    assert (g.vision_params, g.vision_modalities) == (total, ("image", "video"))
    assert g.vision_head_bound == (0, 0) and not g.vision_data_parallel


def test_internlm2s_bias_flag_builds_no_bias() -> None:
    """vLLM 0.33's internlm2.py builds wqkv, wo, gate_up_proj and w2 with bias=False whatever
    `bias` says (the remote config class defaults it to true), alone and as InternVL's text
    model: kvcli reads no bias from it either, on every rank (the per-rank test above)."""
    alone = CASES["tiny-internlm2-bias"]["tp"]["1"][0]
    assert _config("tiny-internlm2-bias")["bias"] is True
    assert not [n for n in alone["param_numel_by_name"] if n.endswith(".bias")]
    assert alone["param_numel"] == 205_120
    for bias in (True, False):
        cfg = {**_config("tiny-internlm2-bias"), "bias": bias}
        assert estimate_params(read_hf_config(cfg, name="tiny-internlm2-bias")) == (205_120, 0)
    inner = CASES["tiny-internvl-internlm2-bias"]["tp"]["1"][0]["param_numel_by_name"]
    assert not [n for n in inner if n.startswith("language_model.") and n.endswith(".bias")]


def test_a_wrapped_configs_refusal_names_the_file_not_its_text_model() -> None:
    """kvcli names a model by its file's _name_or_path, else its model_type: the wrapper's,
    not llm_config's (the refusal said "qwen2's 14 attention heads" before), and a wrapper
    without _name_or_path by its own type (internvl_chat)."""
    cfg = _config("internvl3-1b")
    for named, tp in ((cfg, 4), ({k: v for k, v in cfg.items() if k != "_name_or_path"}, 8)):
        g = read_hf_config(named, source="c.json")
        with pytest.raises(InputError) as e:
            resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=80,
                                    max_model_len=4096)
        who = named.get("_name_or_path", "internvl_chat")
        assert str(e.value) == (f"field 'tensor_parallel_size': {who}'s 14 attention heads must "
                                f"be divisible by it, as vLLM requires; got {tp}")
    assert read_hf_config(cfg).name == "OpenGVLab/InternVL3-1B"
