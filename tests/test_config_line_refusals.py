"""A start-up refusal of a value the trace's config line gave names that line and the key as
written there (``FILE:1: field 'config.KEY': ...``), and the same value given as a flag names the
option (``option --key: ...``). The CPU tier's checks and the model's sizing know only the
option: a config line's retention interval, offload chunk or prefix-match unit was refused as
``option --...``, a flag nobody typed, and a config line's vLLM spelling of a key
(``num_gpu_blocks_override``) as kvcli's flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROWS = (Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl").read_text() \
    .splitlines()[1:4]

NOT_A_MULTIPLE = ("must be a multiple of the CPU tier's 48-token chunk with windowed KV cache "
                  "groups (vLLM refuses to start)")
MAMBA = ("the CPU tier is modelled over a Mamba group whose block divides the chunk, not a "
         "8192-token Mamba block with a 16-token chunk")
UNIT = ("vLLM refuses to start: Invalid prefix_match_unit=5; with a single KV cache group, "
        "prefix-cache hits land on the block size (16). Unset it or set it to 16.")
HYBRID = {"groups": [{"type": "full"}, {"type": "sliding_window", "sliding_window": 13}],
          "max_model_len": 8192}
SHORT = ("one request of max_model_len 8,192 tokens needs 770 blocks (512 full_attention + 258 "
         "sliding_window) but only 2 are usable (num_blocks 3): vLLM refuses to start (async "
         "scheduling: 2 batches in flight; --no-async-scheduling reserves for 1)")
MAMBA_GROUPS = {"groups": [{"type": "full"}, {"type": "mamba"}], "enable_prefix_caching": False,
                "max_model_len": 8192, "num_blocks": 3000}

# (the config line, the flags, the field the config line form names, the message):
# each case runs twice, the value on the config line and then as its flag
CASES = {
    "retention not a multiple of the chunk": (
        {"prefix_cache_retention_interval": 32},
        ["--model", "gpt-oss-20b", "--num-blocks", "2000", "--kv-offloading-size", "1",
         "--kv-offloading-block-size", "48"],
        ["--prefix-cache-retention-interval", "32"],
        "prefix_cache_retention_interval", NOT_A_MULTIPLE),
    "a Mamba block the chunk does not hold": (
        {**MAMBA_GROUPS, "kv_offloading_size": 1}, [], ["--kv-offloading-size", "1"],
        "kv_offloading_size", MAMBA),
    "a prefix-match unit the model refuses": (
        {"prefix_match_unit": 5}, ["--model", "llama-3.1-8b", "--num-blocks", "1000"],
        ["--prefix-match-unit", "5"], "prefix_match_unit", UNIT),
    "vLLM's name of num_blocks": (
        {**HYBRID, "num_gpu_blocks_override": 3}, [], ["--num-blocks", "3"],
        "num_gpu_blocks_override", SHORT),
}


def _trace(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([json.dumps({"config": config}), *ROWS]) + "\n")
    return path


def _refused(args: list[str]) -> str:
    r = CliRunner().invoke(app, ["replay", *args])
    assert r.exit_code == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.output
    return r.stderr


@pytest.mark.parametrize("case", CASES)
def test_a_config_line_value_is_refused_at_its_line_and_a_flag_as_the_option(
        tmp_path: Path, case: str) -> None:
    config, flags, flag, field, message = CASES[case]
    lined = _trace(tmp_path, config)
    assert _refused([str(lined), *flags]) == \
        f"error: {lined}:1: field 'config.{field}': {message}\n"
    # the same value as the flag (the config line without it)
    plain = _trace(tmp_path, {k: v for k, v in config.items() if k != field})
    assert _refused([str(plain), *flags, *flag]) == f"error: option {flag[0]}: {message}\n"


def test_a_flag_over_the_config_line_is_named_as_the_flag(tmp_path: Path) -> None:
    """The flag wins over the config line's value, and the refusal names it."""
    lined = _trace(tmp_path, {"prefix_cache_retention_interval": 48})
    assert _refused([str(lined), "--model", "gpt-oss-20b", "--num-blocks", "2000",
                     "--kv-offloading-size", "1", "--kv-offloading-block-size", "48",
                     "--prefix-cache-retention-interval", "32"]) == \
        f"error: option --prefix-cache-retention-interval: {NOT_A_MULTIPLE}\n"


def test_tier_keys_on_the_config_line_without_a_tier_are_said_there(tmp_path: Path) -> None:
    lined = _trace(tmp_path, {"eviction_policy": "arc"})
    r = CliRunner().invoke(app, ["replay", str(lined), "--num-blocks", "2000",
                                 "--offload-load-steps", "3", "--json"])
    assert r.exit_code == 0, r.output
    assert [w for w in json.loads(r.stdout)["warnings"] if "CPU tier" in w] == [
        (f"option(s) load_steps; eviction_policy (the trace's config line, {lined}:1): no effect "
         "without a CPU tier (kv_offloading_size or kv_offloading_size_chunks)")]
