"""kvcli's draft weights against vLLM 0.33.0's own draft classes, at TP 1, 2, 4 and 8, rank 0
and the last (tests/data/weights_census/drafts_answers.json, recorded by record_drafts.py): the
bytes a rank keeps of the draft's own after vLLM shares the target's embedding and LM head,
for the EAGLE / EAGLE-3 drafts of eagle_draft/, the MTP modules of mtp_draft/, and fp8
checkpoints of both (an fp8 target beside a plain EAGLE-3 draft, fp8 drafts with and without
an ignore list, fp8 MTP targets whose ignore lists name the MTP module's linears)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models.drafts import load_spec_draft
from kvcore.models.hf_config import read_hf_config
from tests.census_rows import built_ranks, check_ranks_agree

DATA = Path(__file__).parent / "data"
CASES = json.loads((DATA / "weights_census" / "drafts_answers.json").read_text())["cases"]


def _draft(name: str):
    case = CASES[name]
    target = read_hf_config(json.loads((DATA / case["target"] / "config.json").read_text()),
                            name=case["target"])
    model = None if case["draft"] is None else str(DATA / case["draft"])
    return load_spec_draft(model, case["method"], target)


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_draft_bytes_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    assert _draft(name).weights_bytes(tp) == sum(rec["param_bytes_by_dtype"].values())


def test_the_draft_census_covers_every_draft_fixture_and_tp() -> None:
    eagle = {f"eagle_draft/{p.name}" for p in (DATA / "eagle_draft").iterdir() if p.is_dir()}
    assert eagle <= set(CASES)
    assert sum(c["method"] == "mtp" for c in CASES.values()) >= 10
    check_ranks_agree(CASES)


@pytest.mark.parametrize(("quant", "says"), [
    ({"quant_method": "fp8", "weight_block_size": [128, 128],
      "ignored_layers": ["model.layers.32.self_attn.o_proj"]},
     "its fp8 ignore list names model.layers.32.self_attn.o_proj, one of its modules"),
    # (a whole AWQ config: vLLM refuses one without its bits before any draft is built)
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
     "is quantised with awq, which kvcli does not size for a draft")])
def test_a_draft_quantised_as_kvcli_does_not_size_is_refused(tmp_path, quant, says) -> None:
    """vLLM matches an EAGLE draft's ignore list at its modules' prefixes, the target's
    numbering (model.layers.32 beside Llama-3.1-8B): a list reaching one would leave the draft
    partly quantised, which kvcli does not size; nor another method."""
    from kvcore.errors import InputError

    case = DATA / "eagle_draft" / "1-llama31-8b-eagle3"
    cfg = json.loads((case / "draft" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, quantization_config=quant)))
    target = read_hf_config(json.loads((case / "target" / "config.json").read_text()))
    with pytest.raises(InputError) as e:
        load_spec_draft(str(tmp_path), "eagle3", target)
    assert e.value.field == "spec_model"
    assert says in e.value.message


def test_a_deepseek_config_without_its_mtp_key_drafts_one_module() -> None:
    """transformers 5.20's DeepseekV3Config defaults num_nextn_predict_layers (num_mtp_layers)
    to 1, and vLLM loads deepseek_v32 with it too: without the key vLLM builds one DeepSeekMTP
    layer (58,004 parameters at TP 1, as with the key), where kvcli read 0 and refused ("has no
    MTP module"). GLM-5's GlmMoeDsaConfig has no such default."""
    name = "mtp_draft/18-tiny-deepseek-v3-no-nextn-key"
    cfg = json.loads((DATA / CASES[name]["target"] / "config.json").read_text())
    assert "num_nextn_predict_layers" not in cfg
    assert CASES[name]["tp"]["1"][0]["param_numel"] == 58_004
    for model_type, layers in (("deepseek_v3", 1), ("deepseek_v32", 1), ("glm_moe_dsa", 0)):
        assert read_hf_config(dict(cfg, model_type=model_type)).mtp_layers == layers
    keyed = _draft("mtp_draft/2-tiny-deepseek-v3")
    assert [_draft(name).weights_bytes(tp) for tp in (1, 2, 4)] == [
        keyed.weights_bytes(tp) for tp in (1, 2, 4)] == [116_016, 72_496, 50_736]
