"""Hostile option values found by a campaign over every command's options (non-UTF-8 bytes,
4,300-digit integers, 100,000-character strings, values past any meaning): each is one short
line `error: option --x: ...` on stderr and exit code 2, without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
MT = str(ROOT / "traces" / "multiturn-chat.jsonl")
OPS = str(ROOT / "tests" / "data" / "oracle_cases" / "chunked-1.ops.jsonl")
BYTE = "\udcff"         # how Python holds a command line's byte 0xff, not UTF-8
DIGITS = "9" * 4300     # the longest integer Python converts from text
runner = CliRunner()


def refused(args: list[str]) -> str:
    """Run kvcli; assert exit 2, nothing on stdout, one stderr line; return it."""
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.stderr and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    return lines[0]


# -- a non-UTF-8 byte ended in a UnicodeEncodeError traceback: the hash seed in the cbor hash and
# -- the JSON summary, a topic when the ZMQ socket opened

@pytest.mark.parametrize("args", [
    ["replay", MT, "--hash-seed", "a" + BYTE, "--json"],
    ["stats", MT, "--hash-seed", "a" + BYTE],
    ["script", OPS, "--hash-seed", "a" + BYTE],
])
def test_hash_seed_must_be_utf8(args):
    assert refused(args) == r"error: option --hash-seed: must be UTF-8 text, got 'a\xff'"


def test_listen_topic_must_be_utf8():
    line = refused(["events", "listen", "tcp://127.0.0.1:5557", "--topic", BYTE])
    assert line == r"error: option --topic: must be UTF-8 text, got '\xff'"


def test_published_topic_must_be_utf8(tmp_path):
    line = refused(["replay", MT, "--kv-events-endpoint", f"ipc://{tmp_path}/s",
                    "--kv-events-topic", BYTE])
    assert line == r"error: option --kv-events-topic: must be UTF-8 text, got '\xff'"


# -- a KV event lag (or a metrics interval) of 1e308 ms was taken: no event ever reached the
# -- router's index, said nowhere; bounded at an hour as the clock's step times are

@pytest.mark.parametrize("flag", ["--kv-event-lag-ms", "--metrics-interval-ms"])
def test_cluster_times_at_most_an_hour(flag):
    line = refused(["cluster", MT, "--router", "llmd_precise", flag, "1e308"])
    assert line == f"error: option {flag}: must be at most 3,600,000 (an hour), got 1e+308"
    line = refused(["cluster", MT, flag, "3600000.5"])
    assert line == f"error: option {flag}: must be at most 3,600,000 (an hour), got 3600000.5"


def test_cluster_lag_of_an_hour_is_taken():
    from kvcore.cluster.checks import check_cluster
    from kvcore.cluster.options import ClusterOptions

    check_cluster(ClusterOptions(kv_event_lag_ms=3_600_000.0, metrics_interval_ms=3_600_000.0))


def test_sweep_cluster_lag_at_most_an_hour(tmp_path):
    line = refused(["sweep", "--trace", MT, "--command", "cluster", "--set",
                    "kv_event_lag_ms=1e308", "--results", str(tmp_path / "r.jsonl")])
    assert line == ("error: option --set: kv_event_lag_ms: must be at most 3,600,000 (an hour), "
                    "got 1e+308")
    assert not (tmp_path / "r.jsonl").exists()


# -- a router's integer option past 64 bits was taken and written to the JSON as a string

def test_router_integer_option_is_64_bit():
    line = refused(["cluster", MT, "--router", "vllm_dp", "--router-opt",
                    f"client_count={2**63}"])
    assert line == ("error: option --router-opt: router vllm_dp option client_count: must be a "
                    "64-bit integer (below 2**63 in size), got 9223372036854775808")
    line = refused(["cluster", MT, "--router", "vllm_dp", "--router-opt",
                    f"client_count={DIGITS}"])
    assert line.endswith("got a 4,300-digit integer")


# -- a 4,300-digit integer or a 100,000-character word was echoed whole: a 4-100 KB error line

@pytest.mark.parametrize("args, said", [
    (["replay", MT, "--num-blocks", DIGITS],
     ("error: option --num-blocks / --num-gpu-blocks-override: must be a 64-bit integer (below "
     "2**63 in size), got a 4,300-digit integer (kvcli replay -h for help)")),
    (["gen", "multiturn", "--turns", "-" + DIGITS],
     ("error: option --turns: must be a 64-bit integer (below 2**63 in size), got a 4,300-digit "
     "integer (kvcli gen -h for help)")),
    (["replay", MT, "--mode", "A" * 100_000],
     ("error: option --mode: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA... is not one of 'engine', "
     "'cache' (kvcli replay -h for help)")),
])
def test_long_values_are_clipped_by_the_parser(args, said):
    """typer's own errors, as the installed command words them (`kvcli.usage_errors`)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "from kvcli.app import main; main()", *args],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == said + "\n"


@pytest.mark.parametrize("args, said", [
    (["replay", MT, "--clock", "A" * 100_000],
     ("error: option --clock: unknown clock 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA...; one of "
     "roofline, calibrated, linear:C0,C1,C2, fixed:MS")),
    (["replay", MT, "--explain", "A" * 100_000],
     f"error: option --explain: no request 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA... in {MT}"),
    (["curve", MT, "--capacities", "9" * 300],   # (4,300 digits read as inf: not finite)
     "error: option --capacities: must be at most 1,000,000,000,000, got a 300-digit integer"),
    (["cluster", MT, "--router-opt", "A" * 100_000],
     ("error: option --router-opt: expected [ROUTER.]KEY=VALUE, got "
     "'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA...")),
])
def test_long_values_are_clipped(args, said):
    assert refused(args) == said


def test_sweep_set_long_integer_is_clipped(tmp_path):
    line = refused(["sweep", "--trace", MT, "--set", f"num_blocks={DIGITS}", "--results",
                    str(tmp_path / "r.jsonl")])
    assert line == ("error: option --set: num_blocks: must be a 64-bit integer (below 2**63 in "
                    "size), got a 4,300-digit integer")


# -- `kvcli sweep --command ''` ran replays without a word (the empty value read as unset)

def test_sweep_empty_command_is_refused(tmp_path):
    line = refused(["sweep", "--trace", MT, "--set", "num_blocks=4096", "--command", "",
                    "--results", str(tmp_path / "r.jsonl")])
    assert line == "error: option --command: must be replay or cluster, got ''"
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("args", [["replay", MT, "--hash-seed", " "],
                                  ["script", OPS, "--hash-seed", ""]])
def test_an_empty_hash_seed_is_refused_by_script_as_by_replay(args):
    # (script took '' as a seed: its hashes then differed from any server's)
    assert refused(args) == (f"error: option --hash-seed: must be a non-empty name or path, got "
                             f"{args[-1]!r}")


def test_a_multiturn_trace_too_large_by_its_turns_names_turns(tmp_path):
    out = tmp_path / "t.jsonl"
    assert refused(["gen", "multiturn", "--turns", "1000", "-o", str(out)]) == (
        "error: option --turns: the trace's block count of about 438,780,000 is more than the "
        "limit of 100,000,000")
    assert not out.exists()
