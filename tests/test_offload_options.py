"""The CPU tier's options as the commands take them: the tier's dtype without a model, the
echoed settings with one, a config line's tier keys; `kvcli config`'s tensor count; and cache
mode's tier events and connector statistics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app


@pytest.mark.parametrize("model, tensors", [("llama-3.1-8b", 1), ("gpt-oss-20b", 2),
                                            ("gemma-3-27b", 7)])
def test_config_counts_kv_cache_tensors_as_vllm_033(model: str, tensors: int) -> None:
    """vLLM 0.33's planner makes one tensor a group and distinct spec (its answers, from
    `kv_cache_planning.py` run under the oracle's vLLM on these models' layer specs: 1, 2, 7);
    `kvcli config` said one a layer (32, 12, 10)."""
    r = CliRunner().invoke(app, ["config", model, "--gpu-memory-gib", "141", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["num_tensors"] == tensors


def test_the_tiers_dtype_follows_kv_cache_dtype_and_a_models_geometry_is_not_echoed() -> None:
    """No model: --kv-cache-dtype fp8 halves a chunk as in vLLM (it was ignored: 2 MiB blocks
    and 512 chunks for 1 GiB, with kv_cache_dtype fp8 and kv_dtype bfloat16 side by side); at
    odds with --kv-dtype it is refused. A model: its geometry sized the tier, and the geometry
    options' unused defaults (32 layers, 8 heads, bfloat16) are no longer echoed."""
    trace = "traces/shared-prefix.jsonl"
    base = ["replay", trace, "--num-blocks", "512", "--kv-offloading-size", "1", "--json"]
    r = CliRunner().invoke(app, base + ["--kv-cache-dtype", "fp8"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert (d["offload"]["kv_bytes_per_block"], d["config"]["kv_dtype"]) == \
        (1 << 20, "float8_e4m3fn")
    r = CliRunner().invoke(app, base + ["--kv-cache-dtype", "fp8", "--kv-dtype", "bfloat16"])
    assert r.exit_code == 2 and r.stderr.startswith("error: option --kv-dtype: is bfloat16 but")
    r = CliRunner().invoke(app, ["replay", trace, "--model", "llama-3.1-8b", "--num-blocks",
                                 "512", "--kv-offloading-size", "1", "--json"])
    assert r.exit_code == 0, r.output
    assert not {"num_layers", "num_kv_heads", "head_size", "kv_dtype"} & set(
        json.loads(r.stdout)["config"])


def test_a_config_lines_tier_keys_are_named_there_and_warned_without_a_tier(tmp_path) -> None:
    """A bad offload_block_size from the config line was blamed on
    --kv-offloading-block-size, a flag never typed; the tier's keys in the line with no tier
    were dropped without the warning the same flags get."""
    rows = [json.dumps({"timestamp": i, "input_length": 64, "output_length": 2})
            for i in range(3)]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([json.dumps({"config": {"kv_offloading_size": 1,
                                                      "offload_block_size": 24}}), *rows]))
    r = CliRunner().invoke(app, ["replay", str(path), "--num-blocks", "512"])
    assert r.exit_code == 2 and r.stderr.startswith(
        f"error: {path}:1: field 'config.offload_block_size': must be a multiple of the block "
        "size 16, got 24"), r.stderr
    path.write_text("\n".join([json.dumps({"config": {"offload_block_size": 32,
                                                      "eviction_policy": "arc"}}), *rows]))
    r = CliRunner().invoke(app, ["replay", str(path), "--num-blocks", "512", "--json"])
    assert r.exit_code == 0, r.output
    assert (f"option(s) eviction_policy, offload_block_size (the trace's config line, {path}:1): "
            "no effect without a CPU tier (kv_offloading_size or kv_offloading_size_chunks)") in \
        json.loads(r.stdout)["warnings"]


def test_cache_mode_writes_a_steps_evictions_before_its_jobs_and_counts_connector_stats(
        tmp_path) -> None:
    """Cache mode wrote a request's store and done lines before the CPU eviction that made room,
    so `kvcli stats` counted more resident chunks (2,223) than the tier holds (2,048); and it
    never recorded vLLM's connector prefix-cache stats (all zero, as were the metrics)."""
    trace = tmp_path / "t.jsonl"
    with open("traces/multiturn-chat.jsonl") as f:
        trace.write_text("".join(line for _, line in zip(range(200), f)))
    events = tmp_path / "ev.jsonl"
    r = CliRunner().invoke(app, ["replay", str(trace), "--mode", "cache", "--num-blocks", "256",
                                 "--kv-offloading-size", "4", "--events", str(events),
                                 "--json"])
    assert r.exit_code == 0, r.output
    off = json.loads(r.stdout)["offload"]
    assert off["max_cpu_used"] == 2048
    stats = off["connector_prefix_cache_stats"]
    assert (stats["requests"], stats["hits"], stats["hits_by_source"]) == \
        (200, off["cpu_hit_tokens"], {"host": off["cpu_hit_tokens"]}) and stats["hits"] > 0
    s = CliRunner().invoke(app, ["stats", str(events), "--json"])
    assert s.exit_code == 0, s.output
    assert json.loads(s.stdout)["cpu_tier"]["max_resident_chunks"] == 2048


@pytest.mark.parametrize("sched", [[], ["--no-async-scheduling"]])
def test_an_engine_idle_on_a_load_whose_empty_steps_cost_nothing_moves_on_to_it(
        tmp_path, sched) -> None:
    """A clock that charges an empty step 0 ms (`linear:0,...`, or a calibration's c_step_us 0)
    and a request waiting for its CPU load, which ends on the clock: the idle steps never got
    there and the replay looped for ever (5 million steps in a minute). After 1,000 idle steps
    the clock goes on to the transfer's end, as to an arrival."""
    rows = [{"timestamp": 0, "input_length": 128, "output_length": 4, "block_size": 16,
             "hash_ids": list(range(1, 9))},
            {"timestamp": 1000, "input_length": 256, "output_length": 4, "block_size": 16,
             "hash_ids": list(range(100, 116))},
            {"timestamp": 2000, "input_length": 128, "output_length": 4, "block_size": 16,
             "hash_ids": list(range(1, 9))}]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = CliRunner().invoke(app, ["replay", str(trace), "--clock", "linear:0,0.05,0.25",
                                 "--num-blocks", "18", "--kv-offloading-size-chunks", "64",
                                 "--json", *sched])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["finished"] == 3 and d["offload"]["load_jobs"] == 1 and d["steps"] < 1100
    assert d["offload"]["cpu_hit_tokens"] > 0


def test_a_config_lines_kv_dtype_at_odds_with_kv_cache_dtype_is_refused(tmp_path) -> None:
    """A config line's kv_dtype float32 was silently replaced by --kv-cache-dtype fp8 (a quarter
    of the bytes the line asked for); refused as the two flags are, naming the line."""
    rows = [json.dumps({"config": {"kv_offloading_size_chunks": 64, "kv_dtype": "float32"}})]
    rows += [json.dumps({"timestamp": i, "input_length": 64, "output_length": 2})
             for i in range(3)]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(rows))
    r = CliRunner().invoke(app, ["replay", str(path), "--kv-cache-dtype", "fp8"])
    assert r.exit_code == 2 and r.stderr.startswith(
        f"error: {path}:1: field 'config.kv_dtype': is float32 but kv_cache_dtype fp8"), r.stderr


MT = str(Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl")


@pytest.mark.parametrize("args, said", [
    # each ran the same as without it, unsaid (a bandwidth study came out flat)
    (["--mode", "cache", "--offload-load-steps", "5", "--no-offload-prompt-only"],
     ("option(s) load_steps, offload_prompt_only: no effect in cache mode (no time: a load or a "
     "store completes at once; only prompt chunks are offered)")),
    (["--arrivals", "step", "--offload-bandwidth-gbps", "0.001"],
     ("option offload_bandwidth_gbps has no effect: transfers take load_steps / store_steps "
     "steps (arrivals step, or the step counts given)")),
    (["--offload-load-steps", "2", "--offload-bandwidth-gbps", "0.001"],
     ("option offload_bandwidth_gbps has no effect: transfers take load_steps / store_steps "
     "steps (arrivals step, or the step counts given)")),
    (["--mode", "cache", "--max-num-batched-tokens", "8"],
     ("option(s) max_num_batched_tokens: no effect in cache mode (no scheduler, no clock; "
     "requests run one at a time)")),
    # (vLLM's start-up check reads the budget for a window's in-flight blocks in every mode)
    (["--mode", "cache", "--max-num-batched-tokens", "8", "--model", "gpt-oss-20b"], None),
])
def test_tier_timing_a_run_does_not_use_is_said(tmp_path, args, said) -> None:
    trace = tmp_path / "t.jsonl"
    with open(MT) as f:
        trace.write_text("".join(line for _, line in zip(range(40), f)))
    tier = [] if "--max-num-batched-tokens" in args else ["--kv-offloading-size", "1"]
    r = CliRunner().invoke(app, ["replay", str(trace), "--num-blocks", "300", *tier, *args,
                                 "--json"])
    assert r.exit_code == 0, r.output
    notes = [w for w in json.loads(r.stdout)["warnings"] if "no effect" in w]
    assert notes == ([said] if said else [])


def test_a_config_lines_step_counts_on_the_clock_are_said(tmp_path) -> None:
    # the line's load_steps / store_steps (the oracle's cases carry them for its fake worker)
    # were read as values, then left unread on the clock, unsaid: the bandwidth times the
    # transfers there, as without them; the flags set step counts
    with open(MT) as f:
        head = "".join(line for _, line in zip(range(60), f))
    lined, plain = tmp_path / "lined.jsonl", tmp_path / "plain.jsonl"
    lined.write_text('{"config": {"load_steps": 7, "store_steps": 7}}\n' + head)
    plain.write_text(head)

    def run(path, *flags):
        r = CliRunner().invoke(app, ["replay", str(path), "--num-blocks", "600",
                                     "--kv-offloading-size", "1", *flags, "--json"])
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout)
        return (d["evictions"], d["sim_time_s"], d["offload"]), d["warnings"]

    (by_line, said), (clock, _) = run(lined), run(plain)
    assert by_line == clock and by_line != run(plain, "--offload-load-steps", "7")[0]
    assert (f"option(s) load_steps, store_steps (the trace's config line, {lined}:1): no effect "
            "on the simulated clock: transfers take their bytes over offload_bandwidth_gbps (the "
            "flags, or arrivals step, use step counts)") in said
    assert not [w for w in run(lined, "--arrivals", "step")[1] if "config line" in w]


def test_groups_of_several_block_sizes_run_under_the_tier_as_vllm_starts_them() -> None:
    """vLLM makes each group's chunk of its own block (tests/data/offload_mixed): groups of 16
    and 32 tokens start; a retention interval must be a multiple of each windowed group's own
    chunk (vLLM's ValueError names tokens_per_chunk). Drafts and a prefix-match unit run too
    (tests/test_offload_mixed_spec.py)."""
    from kvcore.errors import InputError
    from kvcore.offload.options import check_supported
    from kvcore.specs import FullAttentionSpec, KVCacheGroupSpec, SlidingWindowSpec

    mixed = [KVCacheGroupSpec(("f",), FullAttentionSpec(block_size=16)),
             KVCacheGroupSpec(("s",), SlidingWindowSpec(block_size=32, sliding_window=64))]
    check_supported(mixed, 0, 16)
    check_supported(mixed, 64, 16)
    with pytest.raises(InputError, match=r"multiple of the CPU tier's 32-token chunk") as err:
        check_supported(mixed, 48, 16)      # (16's chunk divides 48; the window's 32 does not)
    assert err.value.field == "prefix_cache_retention_interval"


def test_a_mamba_group_with_prefix_caching_off_is_refused_under_the_tier(tmp_path: Path) -> None:
    """With prefix caching off vLLM runs Mamba in 'none' mode (a block of max_model_len, no
    copy-on-write source, no alignment in the tier's lookups), which kvcli's tier does not
    model and the patched oracle cannot build: refused in one line (4 combination draws of Mamba
    groups alone ran)."""
    src = Path(__file__).parent / "data" / "offload_mamba" / "om1.trace.jsonl"
    lines = src.read_text().splitlines()
    cfg = json.loads(lines[0])
    # (Mamba groups alone: the chunk is their block, max_model_len, which it holds; beside
    # full attention the block the chunk cannot hold is refused first)
    cfg["config"].update(enable_prefix_caching=False, prefix_cache_retention_interval=0,
                         groups=[{"type": "mamba"}, {"type": "mamba"}])
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join([json.dumps(cfg), *lines[1:4]]) + "\n")
    r = CliRunner().invoke(app, ["replay", str(trace), "--arrivals", "step", "--json"])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [(
        f"error: {trace}:1: field 'config.enable_prefix_caching': the CPU tier is modelled over "
        "align-mode Mamba groups (prefix caching on), not a Mamba group with prefix caching "
        "off (vLLM's 'none' mode)")]


def test_a_tier_refusal_names_the_config_lines_size_key(tmp_path: Path) -> None:
    """A tier the trace's config line turns on by `kv_offloading_size_chunks` is refused at that
    key, on that line: the tier's refusals named `option --kv-offloading-size`, a flag nobody
    gave (offload_spec_more's mtp70: mtp's block drop in a flagged chunked local group, which
    the tier's legacy hashes make; `tier_option`. The refusal this pinned before, groups of
    several block sizes with a prefix-match unit, runs now: tests/data/offload_mixed_spec)."""
    src = Path(__file__).parent / "data" / "offload_spec_more" / "mtp70.trace.jsonl"
    said = ("a CPU tier keeps vLLM's legacy block hashes, so mtp drops its last block in a "
            "chunked local attention group, which vLLM does not support (it fails at the first "
            "lookup: 'Hybrid KV cache is not supported for eagle + chunked local attention.'): "
            "flag only the groups holding the draft's layers (eagle_groups), or give "
            "no CPU tier")
    r = CliRunner().invoke(app, ["replay", str(src), "--json"])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.strip().splitlines() == [
        f"error: {src}:1: field 'config.kv_offloading_size_chunks': {said}"]
    # (the flag given, the flag is named)
    lines = src.read_text().splitlines()
    cfg = json.loads(lines[0])
    del cfg["config"]["kv_offloading_size_chunks"]
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join([json.dumps(cfg), *lines[1:]]) + "\n")
    r = CliRunner().invoke(app, ["replay", str(trace), "--kv-offloading-size-chunks", "32"])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.strip().splitlines() == [f"error: option --kv-offloading-size-chunks: {said}"]
