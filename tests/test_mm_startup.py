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
from kvcore.models.mm_prefix import atomic_items, check_atomic_item, served_tokens

DATA = Path(__file__).parent / "data" / "mm_startup"
TRACE = Path(__file__).parents[1] / "traces" / "shared-prefix.jsonl"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
REFUSAL = ("error: option --max-num-batched-tokens: vLLM refuses to start: Chunked MM input "
           "disabled but max_tokens_per_mm_item (256) is larger than max_num_batched_tokens "
           "(255). Please increase max_num_batched_tokens. (This class prefills an item "
           "whole: vLLM forces --disable-chunked-mm-input; a limit of 0 or "
           "--language-model-only serves it text-only, without the check)\n")


def _vllm_says(answer: object) -> str | None:
    """The recorded outcome as kvcli's message body (None: vLLM starts)."""
    if isinstance(answer, list) and isinstance(answer[0], str):    # (a message, in pieces)
        return "vLLM refuses to start: " + "".join(answer).removeprefix("ValueError: ")
    return None


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_each_recorded_budget_refused_as_vllm(case: dict) -> None:
    g = read_hf_config(case["config"])
    limits = case["limit_mm_per_prompt"]
    opts = mm_options(None if limits is None else json.dumps(limits), case["language_model_only"])
    # the largest item served, where vLLM prefills items whole (else no check: 0)
    vllm_tokens = max(case["max_tokens_per_item"].values(), default=0)
    assert served_tokens(g.mm_atomic_items, opts) == (vllm_tokens if case["is_mm_prefix_lm"]
                                                      else 0)
    for budget, answer in case["budgets"].items():
        try:
            check_atomic_item(g.mm_atomic_items, opts, int(budget))
            said = None
        except InputError as err:
            assert err.field == "max_num_batched_tokens"
            said = err.message.split(" (This class")[0]
        assert said == _vllm_says(answer), (case["case"], budget)


def test_counted_and_compared() -> None:
    assert sum(len(c["budgets"]) for c in CASES) == 25
    assert sum(_vllm_says(a) is not None for c in CASES for a in c["budgets"].values()) == 11


def test_other_classes_take_no_check() -> None:
    """(their encoder budget grows to the item: max(max_num_batched_tokens, item))"""
    assert atomic_items({"model_type": "llava", "mm_tokens_per_image": 576}) == ()
    assert atomic_items({"model_type": "gemma3", "is_mm_prefix_lm": False}) == ()
    # (PaliGemmaConfig's vision_config when absent: 224 / 14; SigLIP's patch 16 when given)
    assert atomic_items({"model_type": "paligemma"}) == (("image", 256),)
    assert atomic_items({"model_type": "paligemma", "vision_config": {}}) == (("image", 196),)
    # (Gemma 4's audio: Gemma4Processor's default audio_seq_length, not recorded offline)
    g4 = {"model_type": "gemma4", "text_config": {"use_bidirectional_attention": "vision"},
          "vision_config": {"default_output_length": 280}, "audio_config": {}}
    assert atomic_items(g4) == (("image", 280), ("video", 2496), ("audio", 750))
    assert served_tokens(atomic_items(g4), mm_options('{"video": 0}')) == 750


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


def test_gemma4_video_frames_through_the_cli(tmp_path: Path) -> None:
    """Gemma 4 "vision": a video of 32 frames (2,496 tokens) does not fit vLLM's 2,048; eight
    frames (624) do, as does no video (the image's 280)."""
    case = next(c for c in CASES if c["case"] == "gemma4 vision")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(case["config"]))
    base = ["config", "--model-config", str(path), "--gpu-memory-gib", "80",
            "--max-num-batched-tokens", "2048"]
    res = CliRunner().invoke(app, base)
    assert res.exit_code == 2
    assert "max_tokens_per_mm_item (2496) is larger than max_num_batched_tokens (2048)" in (
        res.stderr)
    for limits in ('{"video": {"count": 1, "num_frames": 8}}', '{"video": 0}'):
        res = CliRunner().invoke(app, [*base, "--limit-mm-per-prompt", limits])
        assert res.exit_code == 0, res.output


def test_replay_names_the_config_line_that_set_the_budget(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"config": {"max_num_batched_tokens": 128}}\n' + TRACE.read_text())
    res = CliRunner().invoke(app, ["replay", str(trace), "--model", "gemma-3-27b"])
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {trace}:1: field 'config.max_num_batched_tokens': "
                                 "vLLM refuses to start: Chunked MM input disabled but "
                                 "max_tokens_per_mm_item (256) is larger than "
                                 "max_num_batched_tokens (128).")


@pytest.mark.parametrize("command", [["config", "gemma-3-27b"],
                                     ["replay", str(TRACE), "--model", "gemma-3-27b"],
                                     ["cluster", str(TRACE), "--model", "gemma-3-27b",
                                      "--replicas", "2"]],
                         ids=["config", "replay", "cluster"])
def test_the_item_budget_is_refused_before_the_memory(command: list[str]) -> None:
    """vLLM's LLMEngine / AsyncLLM build the input processor (its `MultiModalBudget`, which
    raises) before the engine core builds the model and profiles the memory: on 10 GiB (Gemma 3
    27B's 50 GiB of weights do not fit) the item's refusal, not the memory's (kvcli said 'no
    memory left for the KV cache'); the scheduler's own refusal still comes first, as vLLM's
    config meets it before either; text-only, no item check, the memory's."""
    res = CliRunner().invoke(app, [*command, "--max-num-batched-tokens", "255",
                                   "--gpu-memory-gib", "10"])
    assert res.exit_code == 2 and res.stderr == REFUSAL
    res = CliRunner().invoke(app, [*command, "--max-num-batched-tokens", "255",
                                   "--gpu-memory-gib", "10", "--no-enable-chunked-prefill"])
    assert res.exit_code == 2 and res.stderr == (
        "error: option --max-num-batched-tokens: 255 is below max_model_len 131072 with chunked "
        "prefill off: vLLM refuses this at start-up (a prompt must fit one step)\n")
    res = CliRunner().invoke(app, [*command, "--max-num-batched-tokens", "255",
                                   "--gpu-memory-gib", "10", "--language-model-only"])
    assert res.exit_code == 2 and res.stderr.startswith(
        "error: option --gpu-memory-gib: no memory left for the KV cache: 10 GiB x 0.92")
