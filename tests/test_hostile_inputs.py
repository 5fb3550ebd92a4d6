"""Hostile inputs (issue 11, item 2): numbers are checked where they enter. NaN, infinities and
out-of-range floats, pools too large for the machine, a trace line too long, `kvcli gen` options
that would write a trace the replay rejects (test_hostile_gen.py): each is one line on stderr and
exit code 2, quickly, without a traceback (a UTF-8 byte-order mark, accepted: test_hostile_bom.py)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.host_memory import (
    BYTES_PER_BLOCK,
    CACHED_BYTES_PER_BLOCK,
    POOL_BYTES_PER_BLOCK,
    GiB,
    available_bytes,
    check_pool_fits,
    pool_bytes,
)
from kvcore.traces.formats import MAX_REQUEST_TOKENS

ROOT = Path(__file__).resolve().parents[1]
MT = str(ROOT / "traces" / "multiturn-chat.jsonl")
SP = str(ROOT / "traces" / "shared-prefix.jsonl")
runner = CliRunner()


def refused(args: list[str], option: str, *words: str) -> str:
    """Run kvcli; assert exit 2 and one line `error: option --x: ...` holding `words`."""
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"error: option {option}: "), lines[0]
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


# -- float options: NaN, infinities, 1e400, out of range -----------------------------------------

@pytest.mark.parametrize("flag", ["--step-overhead-ms", "--decode-ms-per-seq",
                                  "--prefill-ms-per-token"])
@pytest.mark.parametrize("value", ["nan", "inf", "1e400", "-inf"])
def test_replay_clock_options_are_finite(flag, value):
    refused(["replay", MT, flag, value], flag)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e400"])
def test_replay_warmup_and_watermark(value):
    refused(["replay", MT, "--warmup", value], "--warmup")


def test_stats_takes_the_same_checks():
    refused(["stats", MT, "--step-overhead-ms", "inf"], "--step-overhead-ms", "finite")


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
def test_replay_gpu_memory_gib(value):
    refused(["replay", MT, "--model", "llama-3.1-8b", "--gpu-memory-gib", value],
            "--gpu-memory-gib", "finite number > 0")


@pytest.mark.parametrize("args, option", [
    (["--gpu-memory-gib", "nan"], "--gpu-memory-gib"),
    (["--gpu-memory-gib", "inf"], "--gpu-memory-gib"),
    (["--gpu-memory-gib", "1e400"], "--gpu-memory-gib"),
    (["--gpu-memory-gib", "1e300"], "--gpu-memory-gib"),     # overflows when made bytes
    (["--gpu-memory-gib", "0"], "--gpu-memory-gib"),
    (["--gpu-memory-gib", "80", "--weights-gib", "nan"], "--weights-gib"),
    (["--gpu-memory-gib", "80", "--weights-gib", "-1"], "--weights-gib"),
    (["--gpu-memory-gib", "80", "--activation-gib", "inf"], "--activation-gib"),
    (["--gpu-memory-gib", "80", "--gpu-memory-utilization", "nan"], "--gpu-memory-utilization"),
])
def test_config_memory_options(args, option):
    refused(["config", "llama-3.1-8b", *args], option)


@pytest.mark.parametrize("args, option", [
    (["--capacity-tokens", "inf"], "--capacity-tokens"),
    (["--capacity-tokens", "nan"], "--capacity-tokens"),
    (["--capacities", "1e400"], "--capacities"),
    (["--capacity-gib", "1e400", "--model", "llama-3.1-8b"], "--capacity-gib"),
    (["--capacity-gib", "nan", "--model", "llama-3.1-8b"], "--capacity-gib"),
    (["--capacity-gib", "1e300", "--model", "llama-3.1-8b"], "--capacity-gib"),
    (["--capacity-gib", "-4", "--model", "llama-3.1-8b"], "--capacity-gib"),
    (["--capacity-tokens", "1e300"], "--capacity-tokens"),
    (["--capacities", "1000000000001"], "--capacities"),
    (["--block-size", "100000000"], "--block-size"),
    (["--warmup", "nan"], "--warmup"),
    (["--warmup", "inf"], "--warmup"),
])
def test_curve_options(args, option):
    refused(["curve", MT, *args], option)


def test_curve_huge_capacities_allocate_nothing():
    """Capacities far beyond the trace: the one pass and the simulations never allocate per
    capacity unit, so this answers at once."""
    def rates(tokens: str) -> list[float]:
        res = runner.invoke(app, ["curve", SP, "--json", "--capacity-tokens", tokens,
                                  "--policies", "lru,fifo,lfu,eager,optimal"])
        assert res.exit_code == 0, res.output
        return [p["hit_rate"] for p in orjson.loads(res.stdout)["points"]]

    assert rates("1e12") == rates("1e6")       # both hold the whole trace


# -- pools too large for the machine ---------------------------------------------------------------

def test_pool_arithmetic():
    assert BYTES_PER_BLOCK == POOL_BYTES_PER_BLOCK + CACHED_BYTES_PER_BLOCK == 396
    assert pool_bytes(1_000_000_000) == 396_000_000_000
    check_pool_fits(1000, available=1000 * BYTES_PER_BLOCK)        # exactly fits
    with pytest.raises(InputError) as e:
        check_pool_fits(1_000_000_000, available=64 * GiB)
    assert e.value.field == "num_blocks"
    assert e.value.message == (
        "1,000,000,000 blocks need ~368.8 GiB of host memory for the pool (396 bytes a block: "
        "140 for the block, 256 for its prefix-cache entry); this machine has 64.0 GiB "
        "available")
    with pytest.raises(InputError) as e:
        check_pool_fits(1001, available=1000 * BYTES_PER_BLOCK, field="capacities")
    assert e.value.field == "capacities"
    check_pool_fits(10)     # small pools never look at the machine


def test_available_bytes_is_known_here():
    avail = available_bytes()
    assert avail is None or avail > 0


def test_pool_bytes_per_block_as_measured():
    """What POOL_BYTES_PER_BLOCK says: a manager's pool costs no more than that a block."""
    import gc
    import tracemalloc

    from kvcore.kv_cache_manager import KVCacheManager
    from kvcore.specs import FullAttentionSpec, KVCacheGroupSpec

    groups = [KVCacheGroupSpec(("layer",), FullAttentionSpec(block_size=16))]
    n = 20_000
    gc.collect()
    tracemalloc.start()
    try:
        kvm = KVCacheManager(groups, 1 << 20, num_blocks=n, enable_caching=True)
        used = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert kvm.block_pool.get_num_free_blocks() == n - 1
    assert 0.8 * POOL_BYTES_PER_BLOCK <= used / n <= 1.1 * POOL_BYTES_PER_BLOCK


def test_replay_num_blocks_beyond_the_machine():
    line = refused(["replay", MT, "--num-blocks", "1000000000000"], "--num-blocks",
                   "1,000,000,000,000 blocks need ~", "GiB of host memory for the pool",
                   "this machine has")
    assert "368,803.7 GiB" in line


def test_trace_config_num_blocks_beyond_the_machine(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"config": {"num_blocks": 1000000000000}}\n'
                     + Path(SP).read_text())
    res = runner.invoke(app, ["replay", str(trace)])
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().startswith(f"error: {trace}:1: field 'config.num_blocks': "
                                         "1,000,000,000,000 blocks need ~")


def test_script_num_blocks_beyond_the_machine(tmp_path):
    ops = ROOT / "tests" / "data" / "oracle_cases" / "chunked-1.ops.jsonl"
    refused(["script", str(ops), "--num-blocks", "1000000000000"], "--num-blocks",
            "GiB of host memory for the pool")


# -- a single trace line is bounded -----------------------------------------------------------------

def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_a_10_mb_line_is_refused_in_bounded_memory(tmp_path):
    """The issue's line: 1.3M hash ids of 512 tokens (665.6M tokens), which grew a cache-mode
    replay to 23.5 GB; now refused while parsing, under a 2 GiB address-space limit."""
    n = 1_300_000
    trace = tmp_path / "big.jsonl"
    trace.write_bytes(orjson.dumps({"timestamp": 0, "input_length": n * 512,
                                    "output_length": 10, "hash_ids": list(range(n))}) + b"\n")
    assert trace.stat().st_size > 9_000_000
    proc = subprocess.run([sys.executable, "-m", "kvcli", "replay", str(trace), "--mode",
                           "cache", "--block-size", "512"], capture_output=True, text=True,
                          check=False, timeout=120, preexec_fn=_limit_memory, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"error: {trace}:1: field 'hash_ids': 1,300,000 trace blocks (665,600,000 tokens) is "
        f"more than the limit of 10,000,000 tokens a request")


@pytest.mark.parametrize("obj, field", [
    ({"input_length": MAX_REQUEST_TOKENS + 1, "output_length": 1}, "input_length"),
    ({"input_length": 16, "output_length": MAX_REQUEST_TOKENS + 1}, "output_length"),
    ({"input_length": 16, "output_length": 10**30}, "output_length"),
    ({"timestamp": 0, "input_length": 1024, "output_length": 1, "block_size": 1,
      "hash_ids": list(range(1024))}, None),          # fine: within the limit
])
def test_token_counts_are_bounded(tmp_path, obj, field):
    from kvcore.traces import read_trace

    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(obj) + "\n")     # json: orjson writes no int beyond 64 bits
    if field is None:
        assert read_trace(str(trace)).requests[0].prompt_len == 1024
        return
    with pytest.raises(InputError) as e:
        read_trace(str(trace))
    assert e.value.field == field and e.value.line == 1
    assert "is more than the limit of 10,000,000 tokens a request" in e.value.message


def test_token_id_lists_are_bounded(tmp_path):
    from kvcore.traces import read_trace

    trace = tmp_path / "t.jsonl"
    trace.write_bytes(orjson.dumps({"prompt_token_ids": [1] * (MAX_REQUEST_TOKENS + 1),
                                    "output_length": 1}) + b"\n")
    with pytest.raises(InputError) as e:
        read_trace(str(trace))
    assert e.value.field == "prompt_token_ids"
    assert e.value.message == ("10,000,001 token ids is more than the limit of 10,000,000 "
                               "tokens a request")


def test_azure_rows_are_bounded(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:15:46.6805900,99999999999,1\n")
    res = runner.invoke(app, ["replay", str(trace)])
    assert res.exit_code == 2
    assert res.stderr.strip() == (f"error: {trace}:2: field 'ContextTokens': 99,999,999,999 "
                                  "tokens is more than the limit of 10,000,000 tokens a request")
    # past Python's 4,300 digits int() raised ValueError, with a traceback
    limit = "is more than the limit of 10,000,000 tokens a request"
    for tokens, said in (("1" * 5000, f"a 5,000-digit number of tokens {limit}"),
                         ("-" + "1" * 5000, "must be >= 1, got a 5,000-digit negative number")):
        trace.write_text(f"TIMESTAMP,ContextTokens,GeneratedTokens\n"
                         f"2023-11-16 18:15:46.6805900,{tokens},1\n")
        res = runner.invoke(app, ["replay", str(trace)])
        said = f"error: {trace}:2: field 'ContextTokens': {said}\n"
        assert (res.exit_code, res.stderr) == (2, said)


def test_curve_fast_reader_keeps_the_token_bound(tmp_path):
    """A plain Mooncake file takes curve's fast array reader; a line past the bound falls back
    to the full reader, which names it (the fast reader once accepted it)."""
    from kvcore.analysis.curve.fastread import read_hash_id_trace

    big = MAX_REQUEST_TOKENS + 1
    trace = tmp_path / "t.jsonl"
    lines = [{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]},
             {"timestamp": 1, "input_length": big, "output_length": 1,
              "hash_ids": list(range(-(-big // 512)))}]
    trace.write_text("".join(json.dumps(o) + "\n" for o in lines))
    assert read_hash_id_trace(str(trace)) is None
    res = runner.invoke(app, ["curve", str(trace)])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert res.stderr.startswith(f"error: {trace}:2: field 'input_length': ")
    lines[1]["input_length"] = 1000          # within the bound: the fast reader takes it
    lines[1]["hash_ids"] = [1, 3]
    trace.write_text("".join(json.dumps(o) + "\n" for o in lines))
    assert read_hash_id_trace(str(trace)) is not None
