"""vLLM 0.33's --prefix-match-unit (CacheConfig.prefix_match_unit) at start-up, as kvcli takes it.

tests/data/mamba/prefix_match_unit.json was recorded from the real vLLM 0.33.0 on the CPU
(tests/data/mamba/record_prefix_match_unit.py: the real CacheConfig with the unit,
`Platform._align_hybrid_block_size`, the layers' specs, `get_kv_cache_groups`,
`resolve_kv_cache_block_sizes`, `partial_hash_hits_enabled`,
`resolve_cache_hit_alignment_tokens`) for Jamba, Nemotron Nano 9B v2 and Qwen3-Next with units
16, 64 and the block, and one full-attention group with 16, 8 and 32. Before these tests kvcli
had no such option: `kvcli replay --prefix-match-unit` and `kvcli config --prefix-match-unit`
were unknown options.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.prefix_match import (
    cache_hit_alignment,
    partial_hash_hits,
    resolve_block_sizes,
    unmodelled,
)
from kvcore.sizing.resolve import resolve_kv_cache_config
from kvcore.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    MambaSpec,
    SlidingWindowSpec,
)

DATA = Path(__file__).resolve().parent / "data"
CASES = json.loads((DATA / "mamba" / "prefix_match_unit.json").read_text())["cases"]
SOURCES = {"jamba-v0.1": {"model": "jamba-v0.1"},
           "nemotron-nano-9b-v2": {
               "model_config": str(DATA / "mamba" / "nemotron-nano-9b-v2.config.json")},
           "qwen3-next-80b-a3b": {
               "model_config": str(DATA / "mamba" / "qwen3-next-80b-a3b.config.json")}}
HYBRID = [c for c in CASES if c["name"] in SOURCES]
SINGLE = [c for c in CASES if c["name"] == "single-full-16"]
SLIDING = [c for c in CASES if c["name"] == "sliding-full-16"]
runner = CliRunner()


def _id(c: dict) -> str:
    return f"{c['name']}-{c['prefix_match_unit']}"


@pytest.mark.parametrize("want", HYBRID, ids=_id)
def test_hybrid_start_up_as_vllm(want: dict) -> None:
    unit = want["prefix_match_unit"]
    if "refused" in want:
        with pytest.raises(InputError) as err:
            resolve_kv_cache_config(**SOURCES[want["name"]], max_model_len=8192,
                                    num_blocks=1000, prefix_match_unit=unit)
        assert err.value.field == "prefix_match_unit"
        assert err.value.message == f"vLLM refuses to start: {want['refused']}"
        return
    r = resolve_kv_cache_config(**SOURCES[want["name"]], max_model_len=8192, num_blocks=1000,
                                prefix_match_unit=unit)
    specs = [g.kv_cache_spec for g in r.config.kv_cache_groups]
    mamba = next(s for s in specs if isinstance(s, MambaSpec))
    # the blocks do not move with the unit
    assert {s.block_size for s in specs} == {want["block_size"]} == {want["mamba_block_size"]}
    scheduler, hash_bs = resolve_block_sizes(specs, unit, True)
    assert (scheduler, hash_bs) == (want["scheduler_block_size"], want["hash_block_size"])
    assert partial_hash_hits(specs, hash_bs, True) is want["partial_hash_hits"]
    assert cache_hit_alignment(specs, unit, True) == want["cache_hit_alignment_tokens"]
    assert mamba.prefill_checkpoint_alignment == want["mamba_spec"][
        "prefill_checkpoint_alignment"]
    # full attention and Mamba only: kvcli replays every unit vLLM accepts, partial hits too
    assert unmodelled(specs, unit, True) is None


def test_the_recorded_answers() -> None:
    """Spelled out: 16 divides 80, 1,312 and 576, 64 only 576; every accepted unit finer than
    the block turns partial-block hits on; Qwen3-Next's checkpoint grid becomes lcm(unit, 64)."""
    got = {_id(c): ("refused" if "refused" in c else
                    (c["hash_block_size"], c["partial_hash_hits"],
                     c["mamba_spec"]["prefill_checkpoint_alignment"]))
           for c in HYBRID}
    assert got == {"jamba-v0.1-16": (16, True, None), "jamba-v0.1-64": "refused",
                   "jamba-v0.1-80": (80, False, None),
                   "nemotron-nano-9b-v2-16": (16, True, 1),
                   "nemotron-nano-9b-v2-64": "refused",
                   "nemotron-nano-9b-v2-1312": (1312, False, 1),
                   "qwen3-next-80b-a3b-16": (16, True, 64),
                   "qwen3-next-80b-a3b-64": (64, True, 64),
                   "qwen3-next-80b-a3b-576": (576, False, 576)}


@pytest.mark.parametrize("want", SINGLE, ids=_id)
def test_single_group_as_vllm(want: dict) -> None:
    specs = [FullAttentionSpec(block_size=16)]
    unit = want["prefix_match_unit"]
    if "refused" in want:
        with pytest.raises(ValueError) as err:
            resolve_block_sizes(specs, unit, True)
        assert str(err.value) == want["refused"]
        # (vLLM refuses only while blocks are hashed)
        assert resolve_block_sizes(specs, unit, False) == (16, 16)
    else:
        assert resolve_block_sizes(specs, unit, True) == (
            want["scheduler_block_size"], want["hash_block_size"])


@pytest.mark.parametrize("want", SLIDING, ids=_id)
def test_no_mamba_no_partial_hits_as_vllm(want: dict) -> None:
    """A sliding-window and a full-attention group: a finer unit hashes finer, hits stay on the
    block; kvcli models it (full attention registers the prompt's partial last block at the
    unit, as at a gcd finer than its block: tests/data/sched_mixed_pmu/)."""
    specs = [SlidingWindowSpec(block_size=16, sliding_window=1024),
             FullAttentionSpec(block_size=16)]
    unit = want["prefix_match_unit"]
    assert resolve_block_sizes(specs, unit, True) == (want["scheduler_block_size"],
                                                      want["hash_block_size"])
    assert partial_hash_hits(specs, want["hash_block_size"], True) is want["partial_hash_hits"]
    assert cache_hit_alignment(specs, unit, True) == 16
    assert unmodelled(specs, unit, True) is None
    # (a chunked local group instead of the window, at the lcm: modelled, with the CPU tier
    # too: tests/data/sched_chunked_pmu/, offload_chunked_pmu/)
    chunked = [ChunkedLocalAttentionSpec(block_size=16, attention_chunk_size=64), specs[1]]
    assert unmodelled(chunked, unit, True) is None


def _replay(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, ["replay", str(DATA / "sched_mamba" / "a_shared_long.trace.jsonl"),
                            "--arrivals", "step", "--json", *args])
    return r.exit_code, r.stdout, r.stderr


def test_replay_models_partial_hits_and_refuses_what_vllm_refuses() -> None:
    code, out, _ = _replay("--prefix-match-unit", "16")
    # a4, a0's 257 tokens again, hits 256 inside a block (p16_a_shared_long: vLLM's 576)
    assert code == 0 and json.loads(out)["hit_tokens"] == 576
    code, out, err = _replay("--prefix-match-unit", "64")
    assert code == 2 and out == ""
    assert err == ("error: option --prefix-match-unit: vLLM refuses to start: Invalid "
                   "prefix_match_unit=64; prefix-cacheable KV cache group block sizes must be "
                   "divisible by prefix_match_unit. Got group block sizes=[80, 80, 80, 80, 80, "
                   "80, 80, 80], prefix-cacheable=[80, 80, 80, 80, 80, 80, 80, 80].\n")


def test_replay_with_the_block_as_unit_is_unchanged() -> None:
    code, plain, _ = _replay()
    assert code == 0
    code, unit, _ = _replay("--prefix-match-unit", "80")
    assert code == 0
    a, b = json.loads(plain), json.loads(unit)
    assert b["config"].pop("prefix_match_unit") == 80
    assert "prefix_match_unit" not in a["config"]
    for d in (a, b):
        d.pop("wall_time_s")
    assert a == b and a["hit_tokens"] == 560


def test_config_line_unit_is_refused_at_its_line(tmp_path) -> None:
    src = (DATA / "sched_mamba" / "a_shared_long.trace.jsonl").read_text().splitlines()
    head = json.loads(src[0])
    head["config"]["prefix_match_unit"] = 16
    # a sliding window next to the Mamba groups: no partial hits; full attention registers its
    # partial prompt tails at the unit, Mamba its last hash boundary (modelled, checked against
    # vLLM: tests/data/sched_mamba_mixed_pmu/)
    head["config"]["groups"][0] = {"type": "sliding_window", "sliding_window": 160}
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([json.dumps(head), *src[1:]]) + "\n")
    r = runner.invoke(app, ["replay", str(path), "--json"])
    assert r.exit_code == 0, r.output
    # with the CPU tier too (tests/data/offload_mixed_pmu/)
    head["config"]["kv_offloading_size_chunks"] = 64
    path.write_text("\n".join([json.dumps(head), *src[1:]]) + "\n")
    r = runner.invoke(app, ["replay", str(path), "--json"])
    assert r.exit_code == 0, r.output
    # without a Mamba group, full attention's partial tails alone: modelled, with the tier
    # (tests/data/offload_mixed_pmu/) and without (tests/data/sched_mixed_pmu/); beside a
    # chunked local group too (sched_chunked_pmu/, offload_chunked_pmu/)
    head["config"]["groups"] = [{"type": "sliding_window", "sliding_window": 160},
                                {"type": "full"}]
    path.write_text("\n".join([json.dumps(head), *src[1:]]) + "\n")
    r = runner.invoke(app, ["replay", str(path), "--json"])
    assert r.exit_code == 0, r.output
    head["config"].pop("kv_offloading_size_chunks")
    path.write_text("\n".join([json.dumps(head), *src[1:]]) + "\n")
    r = runner.invoke(app, ["replay", str(path), "--json"])
    assert r.exit_code == 0, r.output
    head["config"]["groups"][0] = {"type": "chunked_local", "attention_chunk_size": 160}
    for tier in (None, 64):
        head["config"]["kv_offloading_size_chunks"] = tier
        path.write_text("\n".join([json.dumps(head), *src[1:]]) + "\n")
        r = runner.invoke(app, ["replay", str(path), "--json"])
        assert r.exit_code == 0, r.output
    # a unit no group's block is a multiple of: vLLM's refusal, at the line's key
    head["config"]["prefix_match_unit"] = 48
    path.write_text("\n".join([json.dumps(head), *src[1:]]) + "\n")
    r = runner.invoke(app, ["replay", str(path), "--json"])
    assert r.exit_code == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert r.stderr == (f"error: {path}:1: field 'config.prefix_match_unit': vLLM refuses to "
                        "start: Invalid prefix_match_unit=48; prefix-cacheable KV cache group "
                        "block sizes must be divisible by prefix_match_unit. Got group block "
                        "sizes=[80, 80], prefix-cacheable=[80, 80].\n")


def test_config_shows_vllms_hashing() -> None:
    r = runner.invoke(app, ["config", "jamba-v0.1", "--num-blocks", "1000", "--max-model-len",
                            "8192", "--prefix-match-unit", "16", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["prefix_match"] == {
        "prefix_match_unit": 16, "scheduler_block_size": 80, "hash_block_size": 16,
        "partial_hash_hits": True, "cache_hit_alignment_tokens": 16}
    r = runner.invoke(app, ["config", "llama-3.1-8b", "--num-blocks", "1000",
                            "--prefix-match-unit", "32", "--json"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == ("error: option --prefix-match-unit: vLLM refuses to start: Invalid "
                        "prefix_match_unit=32; with a single KV cache group, prefix-cache hits "
                        "land on the block size (16). Unset it or set it to 16.\n")


def test_our_event_stream_is_refused_with_partial_hits(tmp_path) -> None:
    """Our stream holds one hash a block (what `kvcli stats` rebuilds); vLLM's carries the
    partial keys and is written."""
    ours, theirs = tmp_path / "ours.jsonl", tmp_path / "theirs.jsonl"
    code, out, err = _replay("--prefix-match-unit", "16", "--events", str(ours))
    assert code == 2 and out == "" and not ours.exists()
    assert err == ("error: option --events: our event stream (--events-format jsonl) does not "
                   "model partial-block hits (a --prefix-match-unit finer than the block): use "
                   "--events-format vllm, or leave the unit unset\n")
    code, out, _ = _replay("--prefix-match-unit", "16", "--events", str(theirs),
                           "--events-format", "vllm")
    assert code == 0 and json.loads(out)["hit_tokens"] == 576
    stored = [e for line in theirs.read_text().splitlines()
              for e in json.loads(line).get("events", ()) if e.get("type") == "BlockStored"]
    assert any(e["block_size"] == 16 for e in stored)    # a partial key's, 16 tokens
