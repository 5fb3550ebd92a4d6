"""DeepSeek-V3's, Qwen3-Next's and Qwen3.5's MTP modules beside a ModelOpt target, against vLLM
0.33.0's own draft classes on the meta device as an H100 builds them
(tests/data/weights_census/modelopt/drafts_answers.json, every rank at TP 1, 2, 4 and 8): the
module's decoder layer is quantised as the target's, its exclude list and mixed-precision table
matched at the module's own prefix (model.layers.N), not at the target's last layer that kvcli
sizes it as; Qwen's ``mtp.fc`` quantised unless excluded or NVFP4."""

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


def test_qwens_fc_is_quantised_unless_excluded_or_nvfp4() -> None:
    # (64 x 128: 16,384 B in bfloat16, 8,192 in fp8 with a float32 weight and input scale)
    rank = {n.split("/")[-1].removesuffix(".config.json"): c["tp"]["1"][0][
        "param_bytes_by_dtype"] for n, c in CASES.items() if "qwen" in n}
    fp8, skip = rank["qwen3-next-modelopt-fp8"], rank["qwen3-next-modelopt-fp8-skip-fc"]
    assert fp8["bfloat16"] + 16_384 == skip["bfloat16"]
    assert fp8["float8_e4m3fn"] == skip["float8_e4m3fn"] + 8_192
    name = "weights_census/modelopt/qwen3-next-modelopt-{}.config.json"
    assert _draft(name.format("fp8")).weights_bytes(1) == 122_984      # (131,168 before)
    assert _draft(name.format("fp8-skip-fc")).weights_bytes(1) == 131_168
    assert _draft(name.format("fp8")).weights_bytes(2) == 62_568
    assert _draft(name.format("nvfp4")).weights_bytes(1) == 81_920     # (fc in bfloat16)
