"""ERNIE-4.5's and Step-3.5's MTP drafts (method "mtp") against vLLM 0.33.0's own ErnieMTP and
Step3p5MTP (tests/data/weights_census/drafts2/specs_answers.json: the draft's class, KV specs
and the groups with the target's; ../drafts_answers.json: the draft's own bytes on every rank,
compared by tests/test_draft_census.py).

Before, kvcli refused method mtp for both as not modelled. vLLM: ERNIE's module is a Llama
decoder layer (dense MLP intermediate_size wide), a plain mtp_linear_proj and two norms, its
cache joining the target's one group; Step-3.5's a Step3p5DecoderLayer per module (sliding, MoE
in the hub config) with eh_proj, three norms and an LM head of its own, its sliding cache
joining one of the target's sliding groups.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.drafts import load_spec_draft
from kvcore.models.hf_config import read_hf_config
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import vllms_words

DATA = Path(__file__).parent / "data" / "weights_census"
SPECS = json.loads((DATA / "drafts2" / "specs_answers.json").read_text())["cases"]
DRAFTS = json.loads((DATA / "drafts_answers.json").read_text())["cases"]
BUILT = ("ernie-4.5-21b-a3b-pt", "ernie-4.5-300b-a47b-pt", "step3p5-hub-1mtp")


def _config(name: str) -> Path:
    return DATA / "drafts" / name / "config.json"


def _target(name: str):
    return read_hf_config(json.loads(_config(name).read_text()), name=name)


@pytest.mark.parametrize("name", BUILT)
def test_groups_with_the_draft_equal_vllms(name: str) -> None:
    rec = SPECS[name]
    res = resolve_kv_cache_config(model_config=str(_config(name)), num_blocks=2000,
                                  block_size=16, max_model_len=1024, draft=(None, "mtp"),
                                  num_speculative_tokens=1)
    ours = [(len(g.layer_names), type(g.kv_cache_spec).__name__, g.kv_cache_spec.block_size,
             g.kv_cache_spec.page_size_bytes, sum(n.startswith("draft.") for n in g.layer_names))
            for g in res.config.kv_cache_groups]
    assert ours == [(g["num_layers"], g["spec"]["type"], g["spec"]["block_size"],
                     g["spec"]["page_size_bytes"], len(g["draft_layers"]))
                    for g in rec["kv_cache_groups"]]
    assert res.draft is not None and res.draft.architecture == rec["draft"]["class"]


def test_the_recorded_numbers() -> None:
    """ERNIE-4.5-21B's module: 246,435,840 B at TP 1 (vLLM refuses TP 8: 20 heads), its
    cache one of 29 layers a 32,768-byte page; Step-3.5's one module (the hub's shapes): its
    MoE layer and own LM head, 10,437,830,272 B at TP 1 (4,719,744 of them the float32 router
    and bias), its sliding cache the second group's twelfth layer."""
    ernie = load_spec_draft(None, "mtp", _target("ernie-4.5-21b-a3b-pt"))
    assert [ernie.weights_bytes(tp) for tp in (1, 2, 4)] == [246_435_840, 136_335_360,
                                                            81_285_120]
    assert DRAFTS["drafts/ernie-4.5-21b-a3b-pt"]["tp"]["8"][0]["refused"].startswith(
        "AssertionError")
    step = load_spec_draft(None, "mtp", _target("step3p5-hub-1mtp"))
    assert [step.weights_bytes(tp) for tp in (1, 2, 4, 8)] == [
        10_437_830_272, 5_254_850_176, 2_663_360_128, 1_367_615_104]
    assert DRAFTS["drafts/step3p5-hub-1mtp"]["tp"]["1"][0]["param_bytes_by_dtype"] == {
        "bfloat16": 10_433_110_528, "float32": 4_719_744}
    assert SPECS["step3p5-hub-1mtp"]["kv_cache_groups"][1]["draft_layers"] == [
        "model.layers.45.mtp_block.self_attn.attn"]


@pytest.mark.parametrize(("name", "drop", "says"), [
    ("ernie-4.5-21b-a3b-pt", "num_nextn_predict_layers",
     "mtp with t: it has no MTP module (num_nextn_predict_layers 0)"),
    ("step3p5-hub-1mtp", "layer_types",
     ("mtp with t: its config names no MTP layer kinds (mtp_layer_types, or layer_types padded "
      "with the MTP layers as the hub's are), which kvcli reads to size Step-3.5's Step3p5MTP"))])
def test_a_config_without_what_the_module_reads_is_refused(name: str, drop: str,
                                                          says: str) -> None:
    """ERNIE's config class has no num_nextn_predict_layers (vLLM's ErnieMTP reads it); a
    Step-3.5 config whose layer_types stop at the target's layers leaves the module's kind to
    its config class's defaults, which kvcli does not read."""
    cfg = json.loads(_config(name).read_text())
    if drop == "layer_types":
        cfg["layer_types"] = cfg["layer_types"][:cfg["num_hidden_layers"]]
    else:
        del cfg[drop]
    with pytest.raises(InputError) as e:
        load_spec_draft(None, "mtp", read_hf_config(cfg, name="t"))
    assert (e.value.field, e.value.message) == ("spec_method", says)


REFUSED = json.loads((DATA / "drafts2" / "refused_answers.json").read_text())["cases"]


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_an_mtp_layer_of_a_type_the_target_lacks_is_refused_in_vllms_words(tp: int) -> None:
    """tiny-step3p5-mtp-swa-heads: every target layer full (16 heads), its MTP layer sliding
    (12 heads, which TP 8 does not split). vLLM refuses the speculative config at every TP
    before building anything (its Step3p5MTP config convertor takes each MTP layer's settings
    from the first target layer of its type, list.index), so its MTP attention's head assert
    is never reached: a sliding MTP layer's heads are the target's sliding layers', checked
    first. kvcli had failed on an assertion (the draft's sliding cache without a window)."""
    said = vllms_words(REFUSED["drafts/tiny-step3p5-mtp-swa-heads"]["tp"][str(tp)][0]["refused"])
    assert said == "'sliding_attention' is not in list"
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_target("tiny-step3p5-mtp-swa-heads"),
                                tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=4096, draft=(None, "mtp"))
    assert (e.value.field, e.value.message) == (
        "spec_method", ("mtp with tiny-step3p5-mtp-swa-heads: its MTP layer 4 is "
                        "sliding_attention (mtp_layer_types), a type none of its layer_types "
                        f"has, and vLLM refuses the speculative config: \"{said}\""))
