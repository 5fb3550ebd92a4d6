"""Cases that pin down behaviour no other fixture did: each was built to tell vLLM 0.33.0 from a
one-line mutant of kvcore that every other test let through (the mutation campaign of
tests/data/mutants/README.md, which names the mutant each case kills and how it was made).

Each scheduler trace (`NAME.trace.jsonl`) replays with `--arrivals step` in the mode of its config
line and must match the real `Scheduler`'s answer (`NAME.expected.jsonl`) as the other case
tests compare (`oracle_sched.assert_matches`); a speculative-decoding case (`num_speculative_tokens`
in its config line) as the spec case tests do, drafts and vLLM's spec stats too
(`oracle_sched.check_spec_case`); one with the CPU tier (`kv_offloading_size_chunks`) as
`test_offload_spec_cases` does, the tier's keys too. The last tests pin what a mutant of the
model readings changed, settled by vLLM's source.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_offload_spec_cases as offload_spec
from oracle_sched import answer_of, assert_matches, check_spec_case, config_of, replay_case

from kvcore.clock.draft_passes import DraftPasses
from kvcore.clock.gpus import find_gpu
from kvcore.clock.roofline import RooflineClock
from kvcore.models.config_file import read_config_file
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mtp_draft import mtp_draft
from kvcore.models.weights import estimate_params, estimate_weights_bytes

DATA = Path(__file__).resolve().parent / "data" / "mutants"
TRACES = sorted(DATA.glob("*.trace.jsonl"))


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name.removesuffix(".trace.jsonl"))
def test_sched_case(trace: Path) -> None:
    cfg = config_of(trace)
    if "kv_offloading_size_chunks" in cfg:
        offload_spec.test_spec_offload_case(trace)
        return
    if cfg.get("num_speculative_tokens"):
        check_spec_case(trace)
        return
    asyn = cfg.get("async_scheduling", False)
    assert_matches(answer_of(trace), replay_case(trace, async_scheduling=asyn), asyn=asyn,
                   kv_events=cfg.get("kv_events", False))


def test_the_cases_are_there() -> None:
    # (a case dropped by mistake would let its mutant through again)
    assert [p.name.removesuffix(".trace.jsonl") for p in TRACES] == [
        "mamba_mixed_checkpoints", "mamba_off_no_split", "nochunk_prompt_fills_budget", "priority_preempt_returns_budget",
        "spec_mamba_drop_resumed_checkpoint", "spec_mamba_retention_checkpoint_keys",
        "spec_offload_flagged_window_after_gap", "spec_offload_flagged_window_no_second_pop",
        "spec_offload_mamba_flagged_no_margin",
        "spec_offload_pads_one_token_admission", "spec_offload_unflagged_window_repops",
        "spec_pmu_drop_one_unit_hit",
        "spec_pmu_split_unpads_admission",
        "spec_pp_ngram_drafts_after_last_token", "spec_window_retention_eagle_block0",
        "sw_admission_cap"]
    for p in TRACES:
        answer = p.with_name(p.name.split(".")[0] + ".expected.jsonl")
        assert answer.exists() or answer.with_name(answer.name + ".gz").exists()


def test_sync_pp_usage_weighs_the_wait_for_drafts():
    # (kvcli's clock, not an oracle answer: the campaign's mutant weighed the pool's usage up
    # to the processed batch's end, not to the drafts' return that ends a sync PP step)
    # Under sync PP with drafts a step ends when the last stage returns the drafts of the batch
    # it scheduled (async_loop's t_next): the pool's usage is weighed over that wait. sp142
    # (PP 3) on a clock of 10 ms a batch: 0.1406 over its 0.653 s; weighed only up to each
    # processed batch's end, every step (none processes before its drafts) would weigh 0.
    trace = DATA.parent / "sched_spec_pp" / "sp142.trace.jsonl"
    s, _, _, _ = replay_case(trace, async_scheduling=False, step_overhead_ms=10.0,
                             prefill_ms_per_token=0.0, decode_ms_per_seq=0.0)
    assert s.sim_time_s == 0.653333
    assert s.mean_usage is not None and round(s.mean_usage, 4) == 0.1406


MTP = DATA.parent / "mtp_draft"


def test_qwen3_5_mtp_fc_is_split_over_tp():
    # (the campaign's mutant sent Qwen3.5's MTP classes down DeepSeek's branch: the same
    # weights, but its eh_proj is whole on every worker)
    # vLLM's Qwen3_5MTP builds fc as a ColumnParallelLinear (qwen3_5_mtp.py:98), run on each
    # of the K passes as Qwen3-Next's: 2 x 4,096 x 4,096 / TP 2 a pass for Qwen3.5's defaults.
    g = read_config_file(str(MTP / "15-qwen3-5-defaults" / "target" / "config.json"))
    passes = DraftPasses(mtp_draft(g), 2, RooflineClock(g, find_gpu("h200"), tp=2))
    assert (passes.every_pass_params, passes.first_pass_params) == (16_777_216, 0)


def test_qwen3_5_auto_ssm_dtype_is_the_model_dtype():
    # (the campaign's mutant refused "auto", one of vLLM's mamba_ssm_cache_dtype choices)
    # vLLM's Qwen3.5 hook copies the config's mamba_ssm_dtype into mamba_ssm_cache_dtype
    # (model_executor/models/config.py:963-966): "auto" there is the model dtype, as no key.
    c = json.loads((MTP / "9-tiny-qwen3-5" / "target" / "config.json").read_text())
    assert read_hf_config(c).mamba.ssm_dtype == "float32"
    c["mamba_ssm_dtype"] = "auto"
    assert read_hf_config(c).mamba.ssm_dtype is None


def test_qwen3_5_vision_counts_the_deepstack_mergers():
    # (the campaign's mutant counted none; no other recorded Qwen3.5 vision config lists any)
    # vLLM's Qwen3.5 vision tower builds a merger a `deepstack_visual_indexes` entry: the tiny
    # VL config with [0, 1] has 143,200 vision parameters (93,152 without), 392,744 in all.
    case = "17-tiny-qwen3-5-vl-deepstack"
    rec = json.loads((MTP / "qwen3_5_deepstack_answers.json").read_text())["cases"]
    target = rec[f"{case}/K=0"]["target"]
    g = read_config_file(str(MTP / case / "target" / "config.json"))
    assert g.vision_params == target["param_numel_by_top_module"]["visual"] == 143_200
    assert estimate_params(g) == (target["param_numel"], 0) == (392_744, 0)
    by = target["param_bytes_by_dtype"]
    assert estimate_weights_bytes(g) == by["bfloat16"] + by["float32"]
