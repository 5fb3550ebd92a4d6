"""MiMo-V2 (vLLM 0.33's MiMoV2FlashForCausalLM, MiMoV2ForCausalLM) sized as vLLM builds it:
every layer's spec (192-wide keys, 128-wide values: head_size_v), the groups whose full pages
are raised to the sliding ones', each recorded memory's KVCacheConfig, and the weights and
buffers of every rank at TP 1, 2, 4, 8, against tests/data/mimo_v2/answers.json (vLLM's own
build). Before: kvcli refused both architectures by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models import read_hf_config
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.geometry import ModelGeometry
from kvcore.models.weights import estimate_params, estimate_weights_bytes
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing.config import group_bytes_per_block
from kvcore.sizing.grouping import get_kv_cache_groups

DATA = Path(__file__).parent / "data" / "mimo_v2"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
GiB = 1 << 30
MANAGERS = {"full": "FullAttentionManager", "sliding_window": "SlidingWindowManager"}


def _cfg(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.config.json").read_text())


def _geometry(name: str) -> ModelGeometry:
    return read_hf_config(_cfg(name), source=f"{name}.json")


def _config(name: str, *args: str) -> Any:
    return CliRunner().invoke(app, [
        "config", "--model-config", str(DATA / f"{name}.config.json"), "--max-model-len",
        str(CASES[name]["max_model_len"]), *args])


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_cache_spec_is_vllms(name: str) -> None:
    specs: dict[str, Any] = layer_specs(_geometry(name))
    recorded = CASES[name]["specs"]
    assert ["model." + n + ".self_attn.attn" for n in specs] == [s["name"] for s in recorded]
    for r, s in zip(recorded, specs.values(), strict=True):
        v = getattr(s, "head_size_v", None)
        assert (type(s).__name__, s.block_size, s.num_kv_heads, s.head_size,
                s.head_size if v is None else v, getattr(s, "sliding_window", None),
                s.page_size_bytes) == (
            r["type"], r["block_size"], r["num_kv_heads"], r["head_size"], r["head_size_v"],
            r["sliding_window"], r["page_size_bytes"]), r["name"]


def test_flash_layers() -> None:
    """Full layers 0, 5, 11, ..., 47 (4 KV heads, 40,960-byte pages of 16), 39 sliding
    layers of 8 KV heads over a 128-token window (81,920)."""
    specs: list[Any] = list(layer_specs(_geometry("mimo-v2-flash")).values())
    full = [i for i, s in enumerate(specs) if type(s).__name__ == "FullAttentionSpec"]
    assert full == [0, 5, 11, 17, 23, 29, 35, 41, 47]
    assert {(s.num_kv_heads, s.page_size_bytes, getattr(s, "sliding_window", None))
            for s in specs} == {(4, 40960, None), (8, 81920, 128)}


PLANS = [(n, i) for n in sorted(CASES) for i, p in enumerate(CASES[n]["planning"])
         if "refused" not in p]


@pytest.mark.parametrize(("name", "index"), PLANS)
def test_groups_are_vllms(name: str, index: int) -> None:
    """The full layers' block raised until their page is the sliding layers' (Flash: 32,
    tiny: 64), the sliding layers cut into groups as many as the full ones (8 for Flash's 9:
    8, 8, 8, 8 and 7)."""
    plan = CASES[name]["planning"][index]
    groups = get_kv_cache_groups(layer_specs(_geometry(name)))
    assert [(["model." + n + ".self_attn.attn" for n in g.layer_names],
             g.kv_cache_spec.block_size, group_bytes_per_block(g) // len(g.layer_names))
            for g in groups] == [(r["layers"], r["block_size"], r["page_size_bytes"])
                                 for r in plan["groups"]]
    assert [MANAGERS[g.kv_cache_spec.kind] for g in groups] == plan["managers"]


@pytest.mark.parametrize(("name", "index"), PLANS)
def test_kvcli_config_sizes_as_vllm_planned(name: str, index: int) -> None:
    """Flash at 20 GiB: 29,127 blocks, 802,297 tokens; 60 GiB: 87,381. Tiny at 256 MiB:
    1,638; 1 GiB: 6,553; the equal-width variant at 256 MiB: 4,096."""
    plan = CASES[name]["planning"][index]
    r = _config(name, "--gpu-memory-gib", repr(plan["available"] / GiB),
                "--gpu-memory-utilization", "1", "--weights-gib", "0", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["memory"]["available_kv_cache_bytes"] == plan["available"]
    assert (d["num_blocks"], d["kv_cache_tokens"], d["num_tensors"]) == (
        plan["num_blocks"], plan["kv_cache_tokens"], len(plan["tensors"]))
    assert d["max_concurrency"] == pytest.approx(plan["max_concurrency"], rel=1e-12)
    assert [g["block_size"] for g in d["groups"]] == [g["block_size"] for g in plan["groups"]]
    pm = d["prefix_match"]
    assert (pm["scheduler_block_size"], pm["hash_block_size"], d["block_size"],
            pm["cache_hit_alignment_tokens"]) == (
        plan["scheduler_block_size"], plan["hash_block_size"], plan["engine_block_size"],
        plan["cache_hit_alignment_tokens"])


def test_flash_numbers() -> None:
    plan = CASES["mimo-v2-flash"]["planning"]
    assert [(p["num_blocks"], p["kv_cache_tokens"]) for p in plan] == [
        (29127, 802297), (87381, 2406893)]


RANKS = [(n, tp) for n in sorted(CASES) for tp in CASES[n]["tp"]
         if "refused" not in CASES[n]["tp"][tp][0]]
REFUSED = [(n, tp) for n in sorted(CASES) for tp in CASES[n]["tp"]
           if "refused" in CASES[n]["tp"][tp][0]]


@pytest.mark.parametrize(("name", "tp"), RANKS)
def test_weights_and_buffers_per_rank_are_vllms(name: str, tp: str) -> None:
    """Every rank the same (vLLM's ranks recorded alike); Flash at TP 1: 308,778,780,864
    parameters (617,656,151,936 bytes: its float32 routers and score biases 197,180,416)."""
    g = _geometry(name)
    ranks = CASES[name]["tp"][tp]
    assert len(ranks) == int(tp)
    assert {json.dumps([r["param_bytes_by_dtype"], r["buffer_bytes_by_dtype"]]) for r in ranks} \
        == {json.dumps([ranks[0]["param_bytes_by_dtype"], ranks[0]["buffer_bytes_by_dtype"]])}
    rec = ranks[0]
    assert estimate_weights_bytes(g, int(tp)) == sum(rec["param_bytes_by_dtype"].values())
    assert estimate_buffer_bytes(g, int(tp)) == sum(rec["buffer_bytes_by_dtype"].values())


def test_sliding_heads_tp_does_not_split_are_refused_as_vllm() -> None:
    """The sliding layers' own heads (12 query, 6 KV; the full layers' 8 and 2 split at any TP
    here): vLLM's QKVParallelLinear asserts "6 is not divisible by 4" at TP 4, "12 is not
    divisible by 8" at TP 8, which kvcli sized (its check read only the top-level counts)."""
    assert REFUSED == [("tiny-mimo-v2-swa-heads", "4"), ("tiny-mimo-v2-swa-heads", "8")]
    for name, tp in REFUSED:
        r = _config(name, "--tensor-parallel-size", tp, "--gpu-memory-gib", "1")
        why = CASES[name]["tp"][tp][0]["refused"].removeprefix("AssertionError: ")
        assert r.exit_code == 2, r.output
        kind = "KV" if tp == "4" else "attention"
        assert r.output.strip().splitlines()[-1] == (
            f"error: option --tensor-parallel-size: mimo_v2_flash's layer 1 has {why.split()[0]}"
            f" {kind} heads (swa_num_{'key_value' if tp == '4' else 'attention'}_heads), which "
            f"do not split over the ranks, and vLLM refuses to build it: '{why}'; got {tp}")


def test_flash_parameters() -> None:
    assert estimate_params(_geometry("mimo-v2-flash"))[0] == 308_778_780_864 == CASES[
        "mimo-v2-flash"]["tp"]["1"][0]["param_numel"]


TP_PLANS = [(n, tp, i) for n in sorted(CASES) for tp, t in CASES[n].get("tp_planning", {}).items()
            for i in range(len(t["planning"]))]


@pytest.mark.parametrize(("name", "tp", "index"), TP_PLANS)
def test_a_ranks_caches_and_groups_are_vllms(name: str, tp: str, index: int) -> None:
    """Rank 0's specs at TP 8 (Flash: 1 KV head a layer of either kind, one page of 10,240:
    no block raised) or 4 (tiny), planned by vLLM: Flash at 20 GiB 233,016 blocks; at 80 GiB
    less its rank's weights, 1,568,244,982 bytes, refused at max_model_len 262,144 (1.52 GiB
    needed, 1.46 GiB there, 251,040 the longest that fits), in the same numbers here."""
    rec = CASES[name]["tp_planning"][tp]
    specs: dict[str, Any] = layer_specs(_geometry(name), tp=int(tp))
    assert [(s.num_kv_heads, s.page_size_bytes) for s in specs.values()] == [
        (r["num_kv_heads"], r["page_size_bytes"]) for r in rec["specs"]]
    plan = rec["planning"][index]
    r = _config(name, "--gpu-memory-gib", repr(plan["available"] / GiB), "--tensor-parallel-size",
                tp, "--gpu-memory-utilization", "1", "--weights-gib", "0", "--json")
    if "refused" in plan:
        words = " ".join(plan["refused"])
        assert "(1.52 GiB KV cache is needed" in words and "(1.46 GiB)" in words
        assert " 251040. " in words
        assert (r.exit_code, r.output) == (2, (
            "error: option --max-model-len: one request at max_model_len 262144 needs 1.52 GiB "
            "(17709 blocks) of KV cache, available 1.46 GiB (17015 blocks) (short by 0.06 GiB); "
            "the largest max_model_len that fits is 251040\n"))
        return
    d = json.loads(r.stdout)
    assert (d["num_blocks"], d["kv_cache_tokens"]) == (plan["num_blocks"], plan["kv_cache_tokens"])
    assert [(g["block_size"], g["num_layers"]) for g in d["groups"]] == [
        (g["block_size"], len(g["layers"])) for g in plan["groups"]]


def test_flash_on_80_gib() -> None:
    """bf16 weights: 575.24 GiB at TP 1 (refused: vLLM runs out as it loads them); at TP 8
    each rank's 71.89 GiB leaves 1.46 GiB, short of one 262,144-token request (vLLM's words:
    `test_a_ranks_caches_and_groups_are_vllms`); at 131,072: 17,016 blocks of 92,160 bytes."""
    r = _config("mimo-v2-flash", "--gpu-memory-gib", "80")
    assert (r.exit_code, r.output) == (2, (
        "error: option --gpu-memory-gib: no memory left for the KV cache: 80 GiB x 0.92 = "
        "73.60 GiB, weights 575.24 GiB (estimated), buffers 64.00 MiB; short by 501.70 GiB\n"))
    d = json.loads(_config("mimo-v2-flash", "--gpu-memory-gib", "80", "--tensor-parallel-size",
                           "8", "--max-model-len", "131072", "--json").stdout)
    rank = CASES["mimo-v2-flash"]["tp"]["8"][0]
    available = int(80 * GiB * 0.92) - sum(rank["param_bytes_by_dtype"].values()) - sum(
        rank["buffer_bytes_by_dtype"].values())
    assert d["memory"]["available_kv_cache_bytes"] == available == 1_568_244_982
    assert (d["num_blocks"], d["bytes_per_block"]) == (available // 92160, 92160) == (17016,
                                                                                      92160)


def test_no_pattern_is_refused_in_one_line() -> None:
    cfg = _cfg("tiny-mimo-v2")
    del cfg["hybrid_layer_pattern"]
    with pytest.raises(InputError, match="hybrid_layer_pattern"):
        read_hf_config(cfg, source="c.json")
    with pytest.raises(InputError) as e:
        read_hf_config(_cfg("tiny-mimo-v2") | {"sliding_window_size": None}, source="c.json")
    assert e.value.field == "sliding_window_size"


def test_no_window_makes_the_sliding_layers_full() -> None:
    """sliding_window_size -1: vLLM's layers get no window (full attention with the sliding
    layers' own 8 KV heads)."""
    specs: list[Any] = list(layer_specs(read_hf_config(_cfg("tiny-mimo-v2") | {
        "sliding_window_size": -1})).values())
    assert [(type(s).__name__, s.num_kv_heads) for s in specs] == [("FullAttentionSpec", k)
                                                                  for k in (2, 8, 8, 2, 8, 8)]


def _config_of(cfg: dict[str, Any], path: Path, *args: str) -> Any:
    path.write_text(json.dumps(cfg))
    return CliRunner().invoke(app, ["config", "--model-config", str(path), "--gpu-memory-gib",
                                    "80", *args])


def test_more_ranks_than_experts_is_refused(tmp_path: Path) -> None:
    """mimo_v2.py's MoE block: "Tensor parallel size 8 is greater than the number of experts
    4." (the tiny config with 4 experts)."""
    cfg = _cfg("tiny-mimo-v2") | {"n_routed_experts": 4, "num_experts_per_tok": 2}
    r = _config_of(cfg, tmp_path / "c.json", "--tensor-parallel-size", "8")
    assert r.exit_code == 2
    assert "'Tensor parallel size 8 is greater than the number of experts 4.'" in r.output


def test_flash_fp8_on_80_gib() -> None:
    """The published checkpoint's fp8 (128 x 128 blocks): 308,797,548,096 parameters, 36.28 GiB
    a rank at TP 8, which leaves 39,999,652,726 bytes: 434,024 blocks of 92,160 (vLLM's
    planning on that memory: `test_a_ranks_caches_and_groups_are_vllms`)."""
    d = json.loads(_config("mimo-v2-flash-fp8", "--gpu-memory-gib", "80",
                           "--tensor-parallel-size", "8", "--json").stdout)
    assert d["memory"]["available_kv_cache_bytes"] == 39_999_652_726
    assert (d["num_blocks"], d["kv_cache_tokens"]) == (434024, 6424800)


def test_a_quantisation_but_fp8_blocks_is_not_counted(tmp_path: Path) -> None:
    cfg = _cfg("tiny-mimo-v2") | {"quantization_config": {
        "quant_method": "fp8", "weight_block_size": [128, 128], "ignored_layers": ["lm_head"]}}
    r = _config_of(cfg, tmp_path / "c.json")
    assert (r.exit_code, r.output) == (2, (
        "error: option --weights-gib: mimo_v2_flash: kvcli does not estimate a quantised "
        "MiMo-V2 checkpoint's weights (kvcli counts fp8 in blocks, none ignored): give the "
        "weights' measured size\n"))


def test_fp8_shards_are_checked_with_the_values_width(tmp_path: Path) -> None:
    """At TP 8 tiny's o_proj takes 1 head x 128 values a rank (vLLM built it); read with the
    keys' 192 it would be refused ("input_size_per_partition = 192")."""
    r = _config_of(_cfg("tiny-mimo-v2-fp8"), tmp_path / "c.json", "--tensor-parallel-size", "8")
    assert r.exit_code == 0, r.output


def test_its_mtp_draft_is_refused_as_not_modelled() -> None:
    """vLLM 0.33 runs MiMo-V2's first MTP module (config/speculative.py: mimo_v2_mtp); kvcli
    said vLLM refused the method."""
    r = _config("tiny-mimo-v2", "--gpu-memory-gib", "80", "--speculative-config",
                '{"method": "mtp", "num_speculative_tokens": 1}')
    assert (r.exit_code, r.output) == (2, (
        "error: option --speculative-config's method: mtp with mimo_v2_flash: kvcli does not "
        "model MiMo-V2's MTP module (vLLM 0.33's MiMoV2MTP), its caches and weights "
        "unrecorded\n"))
