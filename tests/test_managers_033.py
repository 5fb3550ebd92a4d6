"""The managers vLLM 0.33 added: every op script recorded from the real vLLM 0.33.0
(tests/data/managers_033, see its README) replays exactly through `kvcli script`'s runner:
block ids per op, block tables, free counts, hits, events and the summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from oracle_ops import check_case, expected_lines
from oracle_sched import answer_of, assert_matches, config_of, replay_case

DATA = Path(__file__).resolve().parent / "data" / "managers_033"
CB = sorted(DATA.glob("cb-*.ops.jsonl"))
RSWA = sorted(DATA.glob("rswa-*.ops.jsonl"))
SINK = sorted(DATA.glob("sink-*.ops.jsonl"))


def test_cases_recorded() -> None:
    assert (len(CB), len(RSWA), len(SINK)) == (30, 30, 2)


@pytest.mark.parametrize("ops_path", CB, ids=lambda p: p.name.split(".")[0])
def test_circular_buffer_case(ops_path: Path) -> None:
    check_case(ops_path)


@pytest.mark.parametrize("ops_path", RSWA, ids=lambda p: p.name.split(".")[0])
def test_rswa_case(ops_path: Path) -> None:
    check_case(ops_path)


def _kvcli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvcli", *args], capture_output=True,
                          text=True, check=False)


def test_circular_buffer_through_the_cli() -> None:
    """`kvcli script` prints vLLM's lines for a ring beside full and sliding-window groups."""
    ops = DATA / "cb-03.ops.jsonl"
    run = _kvcli("script", str(ops))
    assert run.returncode == 0, run.stderr
    got = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    want = expected_lines(ops)
    assert [g["free"] for g in got[:-1]] == [w["free"] for w in want[:-1]]
    assert [g.get("block_table") for g in got] == [w.get("block_table") for w in want]


def test_rswa_through_the_cli() -> None:
    ops = DATA / "rswa-00.ops.jsonl"
    run = _kvcli("script", str(ops))
    assert run.returncode == 0, run.stderr
    got = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    want = expected_lines(ops)
    assert [g.get("block_table") for g in got] == [w.get("block_table") for w in want]
    assert got[-1]["free_blocks"] == want[-1]["free_blocks"]


@pytest.mark.parametrize("ops_path", SINK, ids=lambda p: p.name.split(".")[0])
def test_sink_full_refused_as_vllm_fails(ops_path: Path) -> None:
    """vLLM 0.33 cannot build a SinkFullAttention group (the recorded TypeError): refused with
    one line naming the file and field, exit 2."""
    assert "needs_kv_cache_zeroing" in expected_lines(ops_path)[0]["error"]
    run = _kvcli("script", str(ops_path))
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert ops_path.name in run.stderr and "sink_full" in run.stderr
    assert "needs_kv_cache_zeroing" in run.stderr


SCHED = sorted((DATA / "sched").glob("*.trace.jsonl"))


def test_sched_cases_recorded() -> None:
    assert [t.name.split(".")[0] for t in SCHED] == [
        "cb-async-214", "cb-first-209", "cb-full-204", "rswa-alone-211", "rswa-async-224",
        "rswa-async-225", "rswa-cb-5213", "rswa-full-7156"]


@pytest.mark.parametrize("trace", SCHED, ids=lambda p: p.name.split(".")[0])
def test_sched_case(trace: Path) -> None:
    """vLLM 0.33.0's Scheduler over these groups (sync or async as recorded): every step line,
    each request's hit and preemptions, the prefix-cache stats and the event batches."""
    asyn = config_of(trace).get("async_scheduling", False)
    run = replay_case(trace, async_scheduling=asyn)
    assert_matches(answer_of(trace), run, asyn=asyn,
                   kv_events=config_of(trace).get("kv_events", False))
