"""kvcli's Step3 (text and VL) and GLM-4V (glm-4v-9b) against vLLM 0.33.0's own classes, built
on the meta device at TP 1, 2, 4 and 8, every rank, alone and under the multimodal serving
options (tests/data/weights_census/mm_step3/answers.json; every built rank's bytes are
checked by tests/test_tower_censuses.py): Step3's MFA language model, which kvcli refused,
Step3-VL's vision tower and GLM-4V's EVA2-CLIP tower, which went uncounted, and the
refusals vLLM makes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import WHOLE, estimate_params, estimate_weights_bytes
from tests.census_rows import assert_config_blocks, kvcli_refusal, refused_tps

DATA = Path(__file__).parent / "data" / "weights_census" / "mm_step3"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
REFUSED = refused_tps({n: c for n, c in CASES.items() if "refused" not in c})


def _config(base: str) -> dict:
    return json.loads((DATA / f"{base}.config.json").read_text())


@pytest.mark.parametrize(("name", "tp"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses(name: str, tp: int) -> None:
    """The tiny configs' 4 vision heads at TP 8 (still constructed when the tower is skipped;
    Step3-VL's ``data`` mode holds it whole and builds, GLM-4V's falls back to weights)."""
    assert len(REFUSED) == 6 and {p.values[1] for p in REFUSED} == {8}
    assert "tiny-step3 --mm-encoder-tp-mode data" not in {p.values[0] for p in REFUSED}
    assert kvcli_refusal(DATA, CASES, name, tp).field == "tensor_parallel_size"


@pytest.mark.parametrize(("base", "tower", "buffers"), [
    # 63 layers 1,792 wide (MLP 15,360), 2,705 positions, the two downsampling convolutions
    # and the projector to 7,168 (no bias); 2,705 int64 position_ids
    ("step3", 4_675_374_592, 2705 * 8),
    # 63 layers 1,792 wide, 6,401 positions, the 2 x 2 convolution and the GLU to 4,096
    ("glm-4v-9b-glm4v-arch", 4_506_369_536, 0),
])
def test_the_tower_at_tp1_is_vllms(base: str, tower: int, buffers: int) -> None:
    g = read_hf_config(_config(base))
    assert (g.vision_params, g.vision_buffers) == (tower, buffers)
    lm = CASES[f"{base} --language-model-only"]["tp"]["1"][0]["param_numel"]
    assert estimate_params(g)[0] - tower == lm == CASES[base]["tp"]["1"][0]["param_numel"] - tower


def test_step3_text_alone_is_the_vl_language_model() -> None:
    """316,294,781,952 parameters: the text config alone and Step3-VL without its tower."""
    text, vl = CASES["step3-text"]["tp"], CASES["step3 --language-model-only"]["tp"]
    assert text["1"][0]["param_numel"] == 316_294_781_952
    assert {tp: [r["param_bytes_by_dtype"] for r in ranks] for tp, ranks in text.items()} == {
        tp: [r["param_bytes_by_dtype"] for r in ranks] for tp, ranks in vl.items()}
    g = read_hf_config(_config("step3-text"))
    assert (g.num_kv_heads, g.head_dim, g.share_q_dim, g.shared_expert_width) == (1, 256, 2048,
                                                                                    5120)
    assert sum(g.moe_layers) == 56 and not any(g.moe_layers[:4]) and not g.moe_layers[60]
    assert (g.max_position_embeddings, g.context_limit) == (65536, 65536)


def test_the_published_glm_4v_architecture_is_refused_as_vllm_refuses_it() -> None:
    assert CASES["glm-4v-9b"]["refused"].startswith(
        "RuntimeError: The configuration of this model indicates that it supports vision")
    with pytest.raises(InputError) as e:
        read_hf_config(_config("glm-4v-9b"), source="config.json")
    assert str(e.value) == (
        "config.json: field 'architectures': architecture 'ChatGLMModel' with a "
        "'vision_config': vLLM 0.33 refuses the text-only class for a vision checkpoint: name "
        "\"architectures\": [\"GLM4VForCausalLM\"] (vLLM's --hf-overrides)")


@pytest.mark.parametrize(("enum", "shown"), [(None, "None"), ([4, 5], "[4, 5]"),
                                            ("4,five", "'4,five'")])
def test_a_moe_layers_enum_vllm_cannot_split_is_refused(enum, shown: str) -> None:
    cfg = _config("step3-text")
    cfg["moe_layers_enum"] = enum
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert str(e.value) == (
        "config.json: field 'moe_layers_enum': expected a string of comma-separated layer "
        f"indices, got {shown}: vLLM 0.33's step3_text.py splits it (and fails on its config "
        "class's default, a tuple)")


def test_step3_text_at_tp_8() -> None:
    """(Quantised and on pipeline stages: tests/test_quant_step3.py, test_step3_pp.py.)"""
    g = read_hf_config(_config("step3-text"))
    # (vLLM's: 81,068,046,336 B a rank at TP 8, more than 80 GiB x 0.92)
    assert estimate_weights_bytes(g, 8, WHOLE) == 81_068_046_336 == CASES["step3-text"]["tp"][
        "8"][0]["param_bytes_by_dtype"]["bfloat16"]


@pytest.mark.parametrize(("base", "args", "blocks"), [
    # 91,898 before: the tower uncounted, with a warning
    ("glm-4v-9b-glm4v-arch", ["--tensor-parallel-size", "1"], "78,145"),
    ("glm-4v-9b-glm4v-arch", ["--tensor-parallel-size", "8"], "230,048"),
    # refused before (no max_position_embeddings); 80 GiB does not hold 321B at TP 8: 141
    ("step3", ["--tensor-parallel-size", "8", "--gpu-memory-gib", "141"], "56,353"),
    ("step3", ["--tensor-parallel-size", "8", "--gpu-memory-gib", "141",
               "--language-model-only"], "58,217"),
])
def test_kvcli_config_sizes_them(base: str, args: list[str], blocks: str) -> None:
    assert_config_blocks(DATA / f"{base}.config.json", blocks, *args)
