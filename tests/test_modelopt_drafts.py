"""DeepSeek-V3's MTP module beside a ModelOpt target, against vLLM 0.33.0's own draft class on
the meta device as an H100 builds it (tests/data/weights_census/modelopt/drafts_answers.json,
every rank at TP 1, 2, 4 and 8): the module's decoder layer is quantised as the target's, its
exclude list and mixed-precision table matched at the module's own prefix (model.layers.N), not
at the target's last layer that kvcli sizes it as."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.models.drafts import load_spec_draft
from kvcore.models.hf_config import read_hf_config
from tests.census_rows import built_ranks, check_ranks_agree

DATA = Path(__file__).parent / "data"
CASES = json.loads((DATA / "weights_census" / "modelopt" / "drafts_answers.json").read_text())[
    "cases"]


def _draft(name: str):
    target = read_hf_config(json.loads((DATA / name).read_text()), name=name)
    return load_spec_draft(None, "mtp", target)


@pytest.mark.parametrize(("name", "tp", "rank"),
                         built_ranks(CASES, label=lambda n: n.split("/")[-1]))
def test_mtp_bytes_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    assert _draft(name).weights_bytes(tp) == sum(rec["param_bytes_by_dtype"].values())


def test_the_module_follows_its_own_prefix() -> None:
    # "model.layers.2*" leaves the module (built at model.layers.2) in bfloat16, as a table
    # not listing it does; "model.layers.1.mlp*" (the target's last layer) leaves it fp8
    check_ranks_agree(CASES)
    rank = {n.split("/")[-1].removesuffix(".config.json"): c["tp"]["1"][0][
        "param_bytes_by_dtype"] for n, c in CASES.items()}
    assert rank["deepseek-v3-modelopt-fp8-skip-mtp"] == {"bfloat16": 36_072_712, "float32": 32}
    assert rank["deepseek-v3-modelopt-fp8-skip-last"] == rank["deepseek-v3-modelopt-fp8"]
    assert _draft("weights_census/modelopt/deepseek-v3-modelopt-fp8-skip-mtp.config.json"
                  ).weights_bytes(1) == 36_072_744
