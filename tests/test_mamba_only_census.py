"""kvcli's weights estimate for the attention-free Mamba models against vLLM 0.33.0's own
classes (`MambaForCausalLM`, `FalconMambaForCausalLM`, `Mamba2ForCausalLM`) built on the meta
device at TP 1, 2 and 4, every rank (tests/data/mamba_only/census.json, record_census.py
there): the bytes each rank holds and the parameter count, exactly; and vLLM's refusal of a TP
its MambaMixer2 cannot split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import load_hf_config, read_hf_config
from kvcore.models.weights import estimate_params, estimate_weights_bytes
from kvcore.sizing import resolve_kv_cache_config
from tests.census_rows import built_ranks

DATA = Path(__file__).parent / "data" / "mamba_only"
CASES = json.loads((DATA / "census.json").read_text())["cases"]


def _geometry(name: str):
    return read_hf_config(load_hf_config(DATA / name))


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_bytes_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(_geometry(name), tp) == sum(rec["param_bytes_by_dtype"].values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_parameter_count_equals_vllms(name: str) -> None:
    assert estimate_params(_geometry(name))[0] == CASES[name]["tp"]["1"][0]["param_numel"]


def test_the_census_covers_every_config_and_the_a_log_in_float32() -> None:
    """Six configs, each built at TP 1, 2 and 4 but the tiny Mamba2 at 4 (2 groups); Mamba-1's
    A is float32 whatever the model dtype (MambaMixer), 24 layers x 1536 x 16 in mamba-130m."""
    assert sorted(CASES) == sorted(p.name for p in DATA.glob("*.config.json"))
    built = {n: [tp for tp, ranks in c["tp"].items() if "refused" not in ranks[0]]
             for n, c in CASES.items()}
    assert built == {n: (["1", "2"] if n == "tiny-mamba2.config.json" else ["1", "2", "4"])
                     for n in CASES}
    assert CASES["mamba-130m-style.config.json"]["tp"]["1"][0]["param_bytes_by_dtype"][
        "float32"] == 24 * 1536 * 16 * 4


def test_a_tp_vllms_mamba_mixer2_cannot_split_is_refused() -> None:
    refused = CASES["tiny-mamba2.config.json"]["tp"]["4"][0]["refused"]
    assert "num_groups must equal 1" in refused
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(model_config=str(DATA / "tiny-mamba2.config.json"),
                                tensor_parallel_size=4, gpu_memory_gib=80)
    assert e.value.field == "tensor_parallel_size"
    assert e.value.message.endswith('"If tensor parallel world size does not divide '
                                    'num_groups, then num_groups must equal 1."; got 4')
