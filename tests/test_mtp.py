"""Method mtp (DeepSeek-V3's multi-token prediction module), as vLLM 0.33 runs it.

The scheduler: single-module MTP is EAGLE-3 to it (tests/data/sched_spec_mtp/DESIGN.md); the 10
cases there were answered by vLLM's Scheduler built with `method="mtp"` over a tiny DeepSeek-V3
(one MLA group, so the events say `mla_attention`: the replays run one "mla" group). The pool:
the MTP layer joins the MLA group and its module's weights count (`kvcore.models.mtp_draft`,
checked against vLLM's module recorded in tests/data/mtp_draft). The clock: verifications on
MLA's decode path and the drafter's passes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, check_spec_case
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.clock.batch import StepBatch
from kvcore.clock.linear_form import AGGREGATES
from kvcore.clock.work import aggregate, work_shape
from kvcore.errors import InputError
from kvcore.models.config_file import read_config_file
from kvcore.models.mtp_draft import mtp_draft
from kvcore.models.presets import load_preset

DATA = Path(__file__).resolve().parent / "data"
CASES = sorted((DATA / "sched_spec_mtp").glob("*.trace.jsonl"))
TINY = DATA / "sched_spec_mtp" / "tiny-deepseek-v3" / "config.json"


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_mtp_case(trace: Path):
    # (one full-attention group: the same blocks as the oracle's MLA group, another event kind)
    expected = json.loads(json.dumps(answer_of(trace)).replace('"mla_attention"',
                                                               '"full_attention"'))
    assert check_spec_case(trace, expected)[0].config["spec_method"] == "mtp"


@pytest.mark.parametrize("name", ["seed90100", "aseed90110"])
def test_an_mla_group_from_the_config(name):
    """A config line's (or --groups') "mla" group: the events' kind as vLLM's (the cases whose
    pool holds one max_model_len request: with groups given, vLLM's start-up check applies)."""
    trace = DATA / "sched_spec_mtp" / f"{name}.trace.jsonl"
    check_spec_case(trace, groups=({"type": "mla"},))


def test_the_module_vllm_keeps():
    """vLLM's DeepSeekMTP for the tiny config keeps 116,000 bytes of float16 parameters of
    its own and a 16-byte float32 routing bias (e_score_correction_bias): kvcli's 116,016."""
    recorded = json.loads((DATA / "mtp_draft" / "answers.json").read_text())["cases"][
        "2-tiny-deepseek-v3"]["after_load_sharing"]["param_bytes_by_dtype_not_the_targets"]
    d = mtp_draft(read_config_file(str(TINY)))
    assert (d.weights_bytes(), recorded) == (116_016, {"float16": 116_000, "float32": 16})


def test_deepseek_v3_pool_with_its_mtp_module():
    base = ["config", "deepseek-v3", "--gpu-memory-gib", "141", "--tp", "8",
            "--max-model-len", "32768", "--json"]
    plain = json.loads(CliRunner().invoke(app, base).stdout)
    r = CliRunner().invoke(app, [*base, "--spec-method", "mtp", "--spec-tokens", "1"])
    mtp = json.loads(r.stdout)
    assert (plain["num_blocks"], plain["bytes_per_block"]) == (48_138, 61 * 18_432)
    assert (mtp["num_blocks"], mtp["bytes_per_block"]) == (45_908, 62 * 18_432)
    d = mtp["draft"]
    assert (d["architecture"], d["layer_names"], d["num_kv_heads"], d["head_dim"]) == (
        "DeepSeekMTP", ["draft.layers.61"], 1, 576)
    # one MoE decoder layer's fp8 weights and its MLA projections, eh_proj (2 x 7,168 to
    # 7,168, bf16, on every worker) and three norms
    assert d["weights_bytes"] == mtp_draft(load_preset("deepseek-v3")).weights_bytes(8)
    assert mtp["memory"]["weights_gib"] - plain["memory"]["weights_gib"] == pytest.approx(
        d["weights_gib"])


@pytest.mark.parametrize("model, message", [
    ("deepseek-v2-lite", "vLLM 0.33 refuses it, 'Unsupported speculative method: mtp'"),
    ("llama-3.1-8b", "vLLM 0.33 refuses it, 'Unsupported speculative method: mtp'"),
])
def test_mtp_needs_deepseek_v3(model, message):
    with pytest.raises(InputError) as err:
        mtp_draft(load_preset(model))
    assert message in err.value.message


def test_multi_module_mtp_is_refused(tmp_path):
    """(K 1 is sized: tests/test_mtpmulti.py)"""
    cfg = json.loads(TINY.read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "num_nextn_predict_layers": 2}))
    with pytest.raises(InputError) as err:
        mtp_draft(read_config_file(str(tmp_path / "config.json")), 2)
    assert err.value.message.endswith(
        "it has 2 MTP modules: vLLM 0.33 builds 2 draft layers and with K >= 2 runs "
        "multi-module MTP (prefill and block-hash lookaheads of K tokens, K - 1 "
        "re-prefillable, a scheduler block of at least K with prefix caching), which kvcli "
        "does not model (K 1 is sized: 2 modules, one step each)")
    # (recorded from vLLM's configs: multi-module from K = 2, its lookaheads K; one module,
    # or K = 1, single-module with lookaheads of 1; Qwen3.5's key never multi-module)
    probe = (TINY.parent.parent / "probe_multi_module.out").read_text().splitlines()
    got = {tuple(x.split()[2:5:2]): json.loads(x.split(" ", 5)[5]) for x in probe
           if x.startswith("deepseek_v3")}
    assert {k: (v["multi"], v["prefill"], v["hash"]) for k, v in got.items()} == {
        ("1", "2"): (False, 1, 1), ("2", "1"): (False, 1, 1), ("2", "2"): (True, 2, 2),
        ("2", "4"): (True, 4, 4), ("3", "3"): (True, 3, 3)}
    assert all('"multi": false, "prefill": 1, "hash": 1' in x for x in probe
               if x.startswith("qwen3_5_moe"))


def test_vllms_deprecated_name_is_mtp_with_its_warning():
    """(each name: tests/test_spec_method_names.py)"""
    r = CliRunner().invoke(app, ["replay", str(CASES[0]), "--spec-method", "deepseek_mtp"])
    assert r.exit_code == 0
    assert r.stderr.splitlines()[0] == (
        "warning: method `deepseek_mtp` is deprecated and replaced with mtp.")


def test_a_verification_runs_mlas_decode_path():
    """vLLM's MLA backends take queries of up to 1 + K tokens on the decode path with
    speculative decoding; a verification samples a logit row for each of its tokens."""
    g = load_preset("deepseek-v3")
    batch = StepBatch()
    batch.add(4, 4100, False)           # a verification of 3 drafts
    batch.add(4, 900, True)             # a 4-token prefill chunk: the path, not the logits
    plain = dict(zip(AGGREGATES, aggregate(work_shape(g, tp=8), batch)))
    spec = dict(zip(AGGREGATES, aggregate(work_shape(g, tp=8, spec_tokens=3), batch)))
    assert (plain["latent_pairs"], plain["prefix_ctx"], plain["logit_rows"]) == (0, 4096 + 896, 2)
    pairs = 4 * 4096 + 10 + 4 * 896 + 10
    assert (spec["latent_pairs"], spec["latent_ctx"], spec["prefix_ctx"], spec["logit_rows"]) \
        == (pairs, 4100 + 900, 0, 5)


def test_mtp_speeds_deepseek_decodes_up():
    def tpot(*extra: str) -> float:
        r = CliRunner().invoke(app, ["replay", str(DATA.parent.parent / "traces" /
                                                  "shared-prefix.jsonl"), "--json", "--model",
                                     "deepseek-v3", "--gpu", "h200", "--tp", "8",
                                     "--num-blocks", "20000", *extra])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)["latency"]["tpot_ms"]["p50"]

    off = tpot()
    on = tpot("--spec-method", "mtp", "--spec-tokens", "1", "--spec-acceptance-rate", "0.8")
    assert on < 0.75 * off


@pytest.mark.parametrize("gpu, kv_dtype, spec, longest", [
    ("h200", "auto", 0, 512), ("h100-sxm", "fp8", 0, 128), ("b200", "auto", 0, 1),
    ("a100-80gb", "auto", 3, 4), ("h200", "auto", 600, 601), (None, "auto", 0, 1)])
def test_the_decode_path_is_the_gpus_backends(gpu, kv_dtype, spec, longest):
    """Hopper's FlashAttention MLA takes prefill chunks of up to 512 tokens on the decode path
    (FlashMLA, with an fp8 cache, 128); Blackwell's FlashInfer MLA and the Triton one a single
    token; speculative decoding raises each to a verification's 1 + K."""
    ws = work_shape(load_preset("deepseek-v3"), tp=8, kv_cache_dtype=kv_dtype, gpu=gpu,
                    spec_tokens=spec)
    assert ws.mla_decode_tokens == longest
    chunk = StepBatch()
    chunk.add(256, 4256, True)
    x = dict(zip(AGGREGATES, aggregate(ws, chunk)))
    decode = longest >= 256
    assert (x["latent_ctx"], x["prefix_ctx"]) == ((4256, 0) if decode else (0, 4000))
