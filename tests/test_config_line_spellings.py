"""A trace's config line may spell a key as vLLM does (`prefix_caching_hash_algo`,
`scheduling_policy`, `num_gpu_blocks_override`: `options.resolve` reads them as kvcli's). The
start-up warnings asked of kvcli's names only, so a key in vLLM's spelling that did nothing went
unsaid (and a `num_gpu_blocks_override` that sized the pool was said not to): each is now seen
in either spelling and named as the line writes it (`Trace.config_keys`), marked with the
line's file:line (`refusal.where_set`), as the warnings that did not say where their key came
from now are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROWS = (Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl").read_text() \
    .splitlines()[:3]
CACHE_MODE = ("no effect in cache mode (no scheduler, no clock; requests run one at a time)")
NOT_HASHED = ("has no effect with prefix caching off and no CPU tier: no block is hashed")
runner = CliRunner()


def _warnings(tmp_path: Path, config: dict, *flags: str) -> list[str]:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"config": config}) + "\n" + "\n".join(ROWS) + "\n")
    r = runner.invoke(app, ["replay", str(path), *flags, "--json"])
    assert r.exit_code == 0, r.output
    return [w for w in json.loads(r.stdout)["warnings"] if not w.startswith(
        ("uncalibrated clock", "one request of max_model_len"))]


@pytest.mark.parametrize("key", ["policy", "scheduling_policy"])
def test_a_policy_in_cache_mode_is_said_in_either_spelling(tmp_path, key):
    assert _warnings(tmp_path, {key: "priority"}, "--mode", "cache", "--num-blocks", "600") == [
        f"option(s) {key} (the trace's config line, {tmp_path}/t.jsonl:1): {CACHE_MODE}"]


@pytest.mark.parametrize("key", ["hash_algo", "prefix_caching_hash_algo"])
def test_a_hash_with_prefix_caching_off_is_said_in_either_spelling(tmp_path, key):
    config = {key: "sha256_cbor", "enable_prefix_caching": False}
    assert _warnings(tmp_path, config, "--num-blocks", "600") == [
        f"option {key} (the trace's config line, {tmp_path}/t.jsonl:1) {NOT_HASHED}"]
    # a flag beside it is named apart, the line's key as the line spells it
    assert _warnings(tmp_path, config, "--num-blocks", "600", "--hash-seed", "1") == [
        (f"options hash_seed; {key} (the trace's config line, {tmp_path}/t.jsonl:1) have no "
         "effect with prefix caching off and no CPU tier: no block is hashed")]


@pytest.mark.parametrize("key", ["num_blocks", "num_gpu_blocks_override"])
def test_a_pool_size_on_the_config_line_is_seen_in_either_spelling(tmp_path, key):
    # with a model and a GPU, a pool the line sizes is not "the default": nothing to say
    # (vLLM's spelling drew "gpu times the steps but does not size the KV pool")
    assert _warnings(tmp_path, {key: 3000}, "--model", "llama-3.1-8b", "--gpu", "h100") == []
    # and beside gpu_memory_gib it is the pool (vLLM's spelling was not seen: unsaid)
    assert _warnings(tmp_path, {key: 3000}, "--model", "llama-3.1-8b", "--gpu", "h100",
                     "--gpu-memory-gib", "80") == [
        (f"option gpu_memory_gib has no effect with {key} (the trace's config line, "
         f"{tmp_path}/t.jsonl:1): the pool is its 3,000 blocks, not sized from the memory")]


# (a config line, the flags, the warning after "option ": each names the line's file:line; a
# flag giving the same value is named bare)
MARKED = {
    "long_prefill_token_threshold_adaptive": (
        {"long_prefill_token_threshold_adaptive": True}, ["--num-blocks", "600"],
        ("long_prefill_token_threshold_adaptive{at} has no effect without "
         "long_prefill_token_threshold (0: no cap to floor)")),
    "performance_mode": (
        {"performance_mode": "interactivity"}, ["--num-blocks", "600"],
        ("performance_mode interactivity{at}: no effect here: it changes only vLLM's CUDA graphs, "
         "which kvcli does not model")),
    "prefix_cache_retention_interval": (
        {"prefix_cache_retention_interval": None}, ["--num-blocks", "600"],
        ("prefix_cache_retention_interval dense{at} has no effect: no sliding-window or Mamba KV "
         "cache group (full-attention and chunked-local groups cache every block already)")),
    "sync_load_budget_bytes": (
        {"sync_load_budget_bytes": 100}, ["--num-blocks", "600", "--kv-offloading-size", "1"],
        ("sync_load_budget_bytes{at} has no effect: 100 bytes is less than the least load, one "
         "chunk of 16 tokens (2,097,152 bytes): every load stays asynchronous")),
}
FLAGS = {"long_prefill_token_threshold_adaptive": ["--long-prefill-token-threshold-adaptive"],
         "performance_mode": ["--performance-mode", "interactivity"],
         "prefix_cache_retention_interval": ["--prefix-cache-retention-interval", "none"],
         "sync_load_budget_bytes": ["--offload-sync-load-budget-bytes", "100"]}


@pytest.mark.parametrize("key", sorted(MARKED))
def test_a_warning_about_a_config_line_key_names_its_file_and_line(tmp_path, key):
    config, flags, said = MARKED[key]
    at = f" (the trace's config line, {tmp_path}/t.jsonl:1)"
    assert _warnings(tmp_path, config, *flags) == [f"option {said.format(at=at)}"]
    assert _warnings(tmp_path, {}, *flags, *FLAGS[key]) == [f"option {said.format(at='')}"]


@pytest.mark.parametrize("key", ["num_blocks", "num_gpu_blocks_override"])
def test_a_utilization_beside_a_config_lines_pool_names_the_pools_line(tmp_path, key):
    said = ("option gpu_memory_utilization has no effect unless the pool is sized from a "
            "model's gpu_memory_gib (not with {pool})")
    flags = ["--model", "llama-3.1-8b", "--gpu-memory-gib", "80",
             "--device-memory-utilization", "0.5"]
    at = f" (the trace's config line, {tmp_path}/t.jsonl:1)"
    assert said.format(pool=f"{key}{at}") in _warnings(tmp_path, {key: 3000}, *flags)
    # the flag over the line's value is named bare, in kvcli's spelling
    assert said.format(pool="num_blocks") in _warnings(tmp_path, {key: 3000}, *flags,
                                                       "--num-blocks", "2000")
