"""The EAGLE drafter's passes in the roofline clock (`kvcore.clock.draft_passes`): a first pass
over every scheduled token, then K - 1 one-token passes for the requests that sampled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.clock.batch import StepBatch
from kvcore.clock.draft_passes import DraftPasses
from kvcore.clock.gpus import find_gpu
from kvcore.clock.roofline import RooflineClock
from kvcore.clock.work import aggregate
from kvcore.models.eagle_draft import load_draft
from kvcore.models.presets import load_preset

LLAMA = load_preset("llama-3.1-8b")
DRAFT = load_draft("eagle3-llama-3.1-8b", "eagle3", LLAMA)
TRACE = str(Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl")


def _clock(k: int) -> tuple[RooflineClock, DraftPasses]:
    clock = RooflineClock(LLAMA, find_gpu("h100-sxm"))
    return clock, DraftPasses(DRAFT, k, clock)


def _batch(*rows: tuple[int, int, bool, int]) -> StepBatch:
    b = StepBatch()
    for t, c, prefill, n in rows:
        b.add(t, c, prefill, n)
    return b


def test_the_draft_is_timed_as_its_own_geometry():
    _, passes = _clock(3)
    d = passes.clock
    assert (d.g.num_layers, d.g.vocab_size, d.g.hidden_size) == (1, 32000, 4096)
    # EAGLE-3: the first layer's QKV reads 2 x hidden (the extra half every pass), the fc
    # from 3 x 4,096 hidden states the first pass
    assert passes.every_pass_params == 4096 * (32 + 16) * 128
    assert passes.first_pass_params == 12288 * 4096


def test_k_passes_a_step_the_later_ones_for_sampling_requests():
    clock, three = _clock(3)
    _, one = _clock(1)
    verify = _batch((4, 4100, False, 64))
    first = (three.clock.forward_ms(aggregate(three.clock.ws, verify))
             + three.clock.gemm_ms(12288 * 4096 + 4096 * 6144, 256))
    assert one.gpu_ms(verify) == pytest.approx(first)
    later = sum(three.clock.forward_ms(aggregate(three.clock.ws, StepBatch(
        agg_decodes=64, agg_context=64 * 4100 + i * 64))) + three.clock.gemm_ms(4096 * 6144, 64)
        for i in (1, 2))
    assert three.gpu_ms(verify) == pytest.approx(first + later)
    assert round(three.gpu_ms(verify), 3) == 1.984     # H100 SXM: 17.9 ms for the target's
    # a prefill chunk is drafted over (the draft's KV) but samples no draft of its own
    prefill = _batch((2048, 2048, True, 1))
    assert three.gpu_ms(prefill) == pytest.approx(one.gpu_ms(prefill))
    clock.draft = three
    without = RooflineClock(LLAMA, find_gpu("h100-sxm"))
    assert clock.step_ms(verify) == pytest.approx(without.step_ms(verify) + three.gpu_ms(verify))


def _tpot(*extra: str) -> tuple[float, str]:
    r = CliRunner().invoke(app, ["replay", TRACE, "--json", "--model", "llama-3.1-8b", "--gpu",
                                 "h100-sxm", "--num-blocks", "3000", "--spec-method", "eagle3",
                                 "--spec-tokens", "3", "--spec-acceptance-rate", "0.7", *extra])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["latency"]["tpot_ms"]["p50"], r.stderr


def test_a_replay_times_the_drafter_only_with_its_draft():
    bare, said = _tpot()
    assert "the eagle3 drafter's passes are not in the step times" in said
    timed, said = _tpot("--spec-model", "eagle3-llama-3.1-8b")
    assert "drafter" not in said and timed > bare
