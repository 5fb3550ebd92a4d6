"""Step3 (Step3-VL and its text model) and Step-3.5 on pipeline stages against vLLM 0.33.0's own
build of each stage (tests/data/weights_census/step3_pp/answers.json, record_step3_pp.py: the
tiny configs of quant_step3/ unquantised, TP 1 and 2, PP 2, 3 and 4).

Before, kvcli refused both on pipeline stages. vLLM splits the decoder layers (`get_pp_indices`),
the embedding on the first stage (Step3's on the last too where tied), the final norm and the
LM head on the last, Step3-VL's tower on the first; it cannot build Step3's later stages where
the config gives no tie_word_embeddings (Step3TextConfig has no default), nor a Step-3.5 stage
without a MoE layer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models import read_hf_config
from tests.pp_stage_rows import assert_stage_is_vllms

DATA = Path(__file__).parent / "data" / "weights_census" / "step3_pp"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
# (each case's quant_step3/ config, unquantised, and the tie_word_embeddings written into its
# text config: record_step3_pp.py's CASES)
BASES = {"tiny-step3": ("tiny-step3-fp8", None), "tiny-step3-text": ("tiny-step3-text-fp8", None),
         "tiny-step3p5": ("tiny-step3p5-fp8", None),
         "tiny-step3-tie-false": ("tiny-step3-fp8", False),
         "tiny-step3-text-tie-false": ("tiny-step3-text-fp8", False),
         "tiny-step3-text-tie-true": ("tiny-step3-text-fp8", True)}
BUILT = [(n, k, s) for n, c in CASES.items() for k, st in c.items()
         if not any("refused" in r for r in st) for s in range(len(st))]
REFUSED = [(n, k) for n, c in CASES.items() for k, st in c.items()
           if any("refused" in r for r in st)]


def _config(name: str) -> dict:
    base, tie = BASES[name]
    cfg = json.loads((DATA.parent / "quant_step3" / f"{base}.config.json").read_text())
    cfg.pop("quantization_config")
    if tie is not None:
        (cfg.get("text_config") or cfg)["tie_word_embeddings"] = tie
    return cfg


def test_the_cases() -> None:
    assert sorted(CASES) == sorted(BASES)
    assert (len(BUILT), len(REFUSED)) == (58, 16)


@pytest.mark.parametrize(("name", "key", "stage"), BUILT)
def test_each_stage_is_vllms_bytes_and_buffers(name: str, key: str, stage: int) -> None:
    rec = CASES[name][key][stage]
    g = read_hf_config(_config(name), name=name)
    assert_stage_is_vllms(g, key, stage, rec)


@pytest.mark.parametrize(("name", "key"), REFUSED)
def test_what_vllm_cannot_build_kvcli_refuses_in_its_words(name: str, key: str,
                                                           tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_config(name)))
    r = CliRunner().invoke(app, ["config", "--model-config", str(path), "--max-model-len", "4096",
                                 "--block-size", "16", "--gpu-memory-gib", "10",
                                 "--tensor-parallel-size", key[2],
                                 "--pipeline-parallel-size", key.split("pp")[1]])
    assert r.exit_code == 2, r.output
    words = next(s["refused"] for s in CASES[name][key] if "refused" in s)
    said = r.output.strip().splitlines()[-1]
    assert said.startswith("error: option --pipeline-parallel-size: step3")
    assert said.endswith(f" on {key.split('pp')[1]} pipeline stages: vLLM 0.33 refuses to build "
                         f"it: \"{words}\"")


def test_a_tied_step3_holds_the_embedding_on_its_last_stage_too() -> None:
    """tie_word_embeddings true: the last stage builds the embedding beside its own LM head
    (1,024 x 512 x 2 B more than untied: 14,694,400 B at PP 2, TP 1, vLLM's)."""
    tied = CASES["tiny-step3-text-tie-true"]["tp1-pp2"][1]
    untied = CASES["tiny-step3-text-tie-false"]["tp1-pp2"][1]
    assert sum(tied["param_bytes_by_dtype"].values()) - sum(
        untied["param_bytes_by_dtype"].values()) == 1024 * 512 * 2
