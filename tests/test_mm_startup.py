"""vLLM 0.33's start-up refusal of Gemma 3 and PaliGemma where one image's tokens exceed
--max-num-batched-tokens (vLLM forces --disable-chunked-mm-input for them), checked against
tests/data/mm_startup/answers.json (recorded from vLLM's own `ModelConfig` and
`compute_mm_encoder_budget`: README.md there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.mm_options import mm_options
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mm_prefix import atomic_item_tokens, check_atomic_item
from kvcore.models.mm_serving import apply_mm

DATA = Path(__file__).parent / "data" / "mm_startup"
TRACE = Path(__file__).parents[1] / "traces" / "shared-prefix.jsonl"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
REFUSAL = ("error: option --max-num-batched-tokens: vLLM refuses to start: Chunked MM input "
           "disabled but max_tokens_per_mm_item (256) is larger than max_num_batched_tokens "
           "(255). Please increase max_num_batched_tokens. (This class prefills an image "
           "whole: vLLM forces --disable-chunked-mm-input; an image limit of 0 or "
           "--language-model-only serves it text-only, without the check)\n")


def _vllm_says(answer: object) -> str | None:
    """The recorded outcome as kvcli's message body (None: vLLM starts)."""
    if isinstance(answer, list) and isinstance(answer[0], str):    # (a message, in pieces)
        return "vLLM refuses to start: " + "".join(answer).removeprefix("ValueError: ")
    return None


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_each_recorded_budget_refused_as_vllm(case: dict) -> None:
    g = read_hf_config(case["config"])
    assert g.mm_atomic_tokens == case["max_tokens_per_item"]
    limits = case["limit_mm_per_prompt"]
    _, state = apply_mm(g, mm_options(None if limits is None else json.dumps(limits),
                                      case["language_model_only"]))
    served = state.tower == "built"
    assert served == case["supports_multimodal_inputs"] == case["is_mm_prefix_lm"]
    for budget, answer in case["budgets"].items():
        try:
            check_atomic_item(g.mm_atomic_tokens, served, int(budget))
            said = None
        except InputError as err:
            assert err.field == "max_num_batched_tokens"
            said = err.message.split(" (This class")[0]
        assert said == _vllm_says(answer), (case["case"], budget)


def test_counted_and_compared() -> None:
    compared = [(c["case"], b) for c in CASES for b in c["budgets"]]
    assert len(compared) == 14
    assert sum(_vllm_says(a) is not None for c in CASES for a in c["budgets"].values()) == 6


def test_other_classes_take_no_check() -> None:
    """(their encoder budget grows to the item: max(max_num_batched_tokens, item))"""
    assert atomic_item_tokens({"model_type": "llava", "mm_tokens_per_image": 576}) == 0
    assert atomic_item_tokens({"model_type": "gemma3", "is_mm_prefix_lm": False}) == 0
    # (PaliGemmaConfig's vision_config when absent: 224 / 14; SigLIP's patch 16 when given)
    assert atomic_item_tokens({"model_type": "paligemma"}) == 256
    assert atomic_item_tokens({"model_type": "paligemma", "vision_config": {}}) == 196


@pytest.mark.parametrize("command", [["config", "gemma-3-27b", "--gpu-memory-gib", "80"],
                                     ["replay", str(TRACE), "--model", "gemma-3-27b"]],
                         ids=["config", "replay"])
def test_cli_refuses_in_vllms_words(command: list[str]) -> None:
    """(before: both ran, as if vLLM had started)"""
    res = CliRunner().invoke(app, [*command, "--max-num-batched-tokens", "255"])
    assert res.exit_code == 2 and res.stderr == REFUSAL
    for extra in (["--max-num-batched-tokens", "256"],
                  ["--max-num-batched-tokens", "255", "--language-model-only"],
                  ["--max-num-batched-tokens", "255", "--limit-mm-per-prompt", '{"image": 0}']):
        res = CliRunner().invoke(app, [*command, *extra])
        assert res.exit_code == 0, res.output
        assert "max_tokens_per_mm_item" not in res.stderr
