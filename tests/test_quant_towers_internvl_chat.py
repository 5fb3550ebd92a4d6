"""InternVL's remote-code classes (InternVLChatModel, H2OVL, NVLM-D, Skywork-R1V) and InternS1
under quantised checkpoints, against vLLM 0.33.0 (tests/data/weights_census/quant_towers/,
the ``tiny-internvl-chat``, ``tiny-h2ovl-q``, ``tiny-nvlm-d-q``, ``tiny-skywork-q`` and
``tiny-interns1`` cases; every rank's bytes are tests/test_quant_towers.py's): InternViT takes
the quant_config, split only where TP divides its heads; Skywork-R1V's mlp1 too; the AWQ patch
of internvl.py; InternS1's tower never quantised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import case_geometry

DATA = Path(__file__).parent / "data" / "weights_census" / "quant_towers"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]


def _bytes(name: str, tp: int = 1) -> tuple[int, int]:
    """(kvcli's bytes, vLLM's) at rank 0 of `tp`."""
    rec = CASES[name]["tp"][str(tp)][0]
    return (estimate_weights_bytes(case_geometry(DATA, CASES, name), tp),
            sum(rec["param_bytes_by_dtype"].values()))


@pytest.mark.parametrize(("name", "want"), [
    ("tiny-internvl-chat-awq", 3_658_752), ("tiny-internvl-chat-fp8", 4_981_392),
    ("tiny-internvl-chat-fp8-block", 4_981_936), ("tiny-internvl-chat-ct-w4a16", 3_648_356),
    ("tiny-h2ovl-q-gptq", 3_654_144), ("tiny-nvlm-d-q-ct-fp8", 11_275_300),
    ("tiny-skywork-q-awq", 3_173_632), ("tiny-skywork-q-modelopt-fp8", 6_226_576),
])
def test_the_tower_is_quantised_at_tp_1(name: str, want: int) -> None:
    assert _bytes(name) == (want, want)


@pytest.mark.parametrize(("name", "tp", "layer"), [
    # (TP 4 divides the 4 heads: the attention's proj split to 64 wide; at TP 8 it is whole,
    # and the MLP's fc2 the first refused; NVLM-D's 1 + 7 dummy heads split at 8)
    ("tiny-internvl-chat-ct-w4a16", 4, "vision_model.encoder.layers.0.attn.proj"),
    ("tiny-internvl-chat-ct-w4a16", 8, "vision_model.encoder.layers.0.mlp.fc2"),
    ("tiny-skywork-q-ct-w4a16", 8, "vision_model.encoder.layers.0.mlp.fc2"),
    ("tiny-nvlm-d-q-ct-w4a16", 8, "vision_model.encoder.layers.0.mlp.fc2"),
])
def test_a_tower_shard_is_refused_naming_vllms_layer(name: str, tp: int, layer: str) -> None:
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=case_geometry(DATA, CASES, name),
                                tensor_parallel_size=tp, gpu_memory_gib=4096,
                                max_model_len=4096)
    assert f"(the vision tower's {layer})" in e.value.message
    assert f"for layer '{layer}' is not divisible by group_size=128" in e.value.message
    assert f"for layer '{layer}'" in CASES[name]["tp"][str(tp)][0]["refused"]


@pytest.mark.parametrize("base", ["tiny-internvl-chat", "tiny-h2ovl-q", "tiny-nvlm-d-q"])
def test_awq_without_a_list_leaves_vision_model_out_where_the_llm_config_is_quantised(
        base: str) -> None:
    """_patch_quant_config: the quantization_config in llm_config alone, or in both, and no
    modules_to_not_convert: "vision_model" added, as a list naming the tower would; only at
    the top, no patch: the tower packed."""
    skipped = _bytes(f"{base}-awq-skip-tower")
    assert _bytes(f"{base}-awq-llm") == _bytes(f"{base}-awq-both") == skipped
    assert _bytes(f"{base}-awq")[0] == _bytes(f"{base}-awq")[1] < skipped[1]


def test_skyworks_mlp1_stays_packed_under_the_patch() -> None:
    """The patch adds "vision_model" only: Skywork-R1V's mlp1 ReplicatedLinears are packed."""
    assert _bytes("tiny-skywork-q-awq-llm") == (5_502_208,) * 2
    assert _bytes("tiny-skywork-q-awq-skip-tower") == (5_987_328,) * 2


def test_modelopt_leaves_vision_model_unquantised_but_skyworks_mlp1() -> None:
    """get_quant_method's hard-coded vision_model prefix: InternViT in the model dtype."""
    names = CASES["tiny-skywork-q-modelopt-fp8"]["tp"]["1"][0]["param_numel_by_name"]
    scales = sorted(n for n in names if n.endswith("_scale") and "language_model" not in n)
    assert scales == [f"mlp1.{i}.{s}_scale" for i in (1, 3) for s in ("input", "weight")]
    names = CASES["tiny-internvl-chat-modelopt-fp8"]["tp"]["1"][0]["param_numel_by_name"]
    assert not any(n.endswith("_scale") and "language_model" not in n for n in names)


def test_interns1_leaves_its_tower_unquantised_under_every_method() -> None:
    """InternS1's remote-code class is vLLM's InternS1ForConditionalGeneration (HF InternVL)."""
    names = [n for n in CASES if n.startswith("tiny-interns1-")]
    towers = {json.dumps({k: v for k, v in CASES[n]["tp"]["1"][0]["param_numel_by_name"].items()
                          if k.startswith("vision_tower")}) for n in names}
    assert len(names) == 10 and len(towers) == 1
