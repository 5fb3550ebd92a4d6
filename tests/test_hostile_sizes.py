"""Sizes a user types that made a run take unbounded memory or time without a word: each is now
refused in one line (exit 2) when it cannot fit this machine, or said before the long work.
The checks are tested, not the long runs (a guard makes the old code fail fast)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.host_memory import (
    BYTES_PER_BLOCK,
    REPLICA_BYTES,
    WORKER_BYTES,
    GiB,
    check_parallel_jobs,
    check_replicas_fit,
)

ROOT = Path(__file__).resolve().parents[1]
CHAT = str(ROOT / "traces" / "multiturn-chat.jsonl")
runner = CliRunner()


def _no_run(monkeypatch) -> None:
    """A cluster that gets past its checks fails the test at once instead of running."""
    from kvcore.cluster import run

    def built(*_a, **_k):
        raise AssertionError("the cluster was built")

    monkeypatch.setattr(run, "build_loop", built)


# -- kvcli cluster --replicas 100000 --num-blocks 128 grew to 2.8 GB with no word: only the N
# -- pools were counted, not each replica's engine

def test_replicas_count_their_engines_not_only_their_pools():
    per = REPLICA_BYTES + 128 * BYTES_PER_BLOCK
    check_replicas_fit(1000, 128, available=1000 * per)         # exactly fits
    with pytest.raises(InputError) as e:
        check_replicas_fit(100_000, 128, available=6 * GiB)     # the pools alone: 4.7 GiB
    assert e.value.field == "replicas"
    assert e.value.message == (
        "100,000 replicas need ~7.8 GiB of host memory (~81 KiB each: ~32 KiB for the engine, "
        "396 bytes a block of its 128); this machine has 6.0 GiB available")


def test_cluster_replicas_past_memory_refused_before_a_replica_is_built(monkeypatch):
    from kvcore import host_memory

    monkeypatch.setattr(host_memory, "available_bytes", lambda: 6 * GiB)
    _no_run(monkeypatch)
    r = runner.invoke(app, ["cluster", CHAT, "--replicas", "100000", "--num-blocks", "128"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.stderr == (
        "error: option --replicas: 100,000 replicas need ~7.8 GiB of host memory (~81 KiB each: "
        "~32 KiB for the engine, 396 bytes a block of its 128); this machine has 6.0 GiB "
        "available\n")


# -- ... and 30,000 replicas that fit ran for minutes without a word (no progress either)

def test_a_cluster_long_for_its_replicas_is_said_before_it_runs(monkeypatch):
    from kvcore.cluster import cost

    monkeypatch.setattr(cost, "SAY_VISITS", 1000)
    said: list[str] = []

    def routed(*_a, **_k):
        raise KeyboardInterrupt      # (the warning came before the first request was routed)

    from kvcore.cluster.loop import ClusterLoop

    monkeypatch.setattr(ClusterLoop, "run", routed)
    from kvcore.cluster.run import ClusterOptions, run_cluster
    from kvcore.engine.options import ReplayOptions

    out = run_cluster(CHAT, ReplayOptions(num_blocks=512), ClusterOptions(replicas=4),
                      warn=said.append)
    assert out["routers"][0]["interrupted"] is True
    assert said[0] == (
        "option replicas: 4 replicas make a long run: each of the 294 requests is routed "
        "against every replica, and each of ~1,454 metrics samples reads every replica: "
        "~6,992 replica visits, on the order of a minute at ~3 µs a visit (fewer replicas run "
        "faster)")


def test_metrics_in_cache_mode_are_refused_before_any_replica_with_no_long_run_note(
        monkeypatch, tmp_path):
    """A live cluster's metrics are refused in cache mode before a replica is built: that error
    alone, not the long-run warning before it."""
    from kvcore.cluster import cost

    monkeypatch.setattr(cost, "SAY_VISITS", 1000)
    r = runner.invoke(app, ["cluster", CHAT, "--replicas", "4", "--num-blocks", "512",
                            "--mode", "cache", "--metrics", str(tmp_path / "m.jsonl")])
    assert r.exit_code == 2
    assert r.stderr == ("error: option --metrics: engine mode only: cache mode runs no "
                        "scheduler and no steps for vLLM's metrics to measure\n")
    assert not (tmp_path / "m.jsonl").exists()


def test_a_short_cluster_says_nothing_of_its_length():
    from kvcore.cluster.cost import long_run_note
    from kvcore.engine.cost import CostModel
    from kvcore.engine.options import ReplayOptions
    from kvcore.traces import read_trace

    assert long_run_note(8, 1, read_trace(CHAT), ReplayOptions(), 50.0, CostModel()) is None


def test_the_long_run_counts_the_samples_taken_after_the_last_arrival(tmp_path, monkeypatch):
    """Samples go on to the last step: one request of 1,000,000 output tokens decodes for
    5,249,994.75 ms at the default clock's 5.25 ms a step, 105,000 samples of 50 ms, where the
    last arrival (0) alone counted 1. With arrivals=ignore (the loop samples then too; none
    were counted) the chat trace's longest request alone runs 2,294.25 ms: 46."""
    from kvcore.cluster import cost
    from kvcore.cluster.loop import ClusterLoop
    from kvcore.cluster.run import ClusterOptions, run_cluster
    from kvcore.engine.cost import CostModel
    from kvcore.engine.options import ReplayOptions
    from kvcore.traces import read_trace

    p = tmp_path / "long.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 32, "output_length": 1000000, '
                 '"hash_ids": [0]}\n')
    one = read_trace(str(p))
    assert cost.replica_visits(4, 1, one, ReplayOptions(), 50.0, CostModel()) \
        == (4 * (1 + 105_000), 105_000)
    assert cost.replica_visits(4, 1, one, ReplayOptions(mode="cache"), 50.0, CostModel()) \
        == (4 * (1 + 1), 1)             # (cache mode: every request runs at its arrival)
    chat = read_trace(CHAT)
    assert cost.replica_visits(4, 1, chat, ReplayOptions(arrivals="ignore"), 50.0,
                               CostModel()) == (4 * (294 + 46), 46)
    # the run counts with the replicas' clock (here the default one) and says it
    monkeypatch.setattr(cost, "SAY_VISITS", 1000)
    monkeypatch.setattr(ClusterLoop, "run", lambda self: None)
    said: list[str] = []
    run_cluster(str(p), ReplayOptions(num_blocks=70000, max_model_len=1000100),
                ClusterOptions(replicas=4), warn=said.append)
    assert ("each of ~105,000 metrics samples reads every replica: ~420,004 replica visits"
            in said[-1])


def test_the_long_run_of_a_windowed_model_on_the_roofline_counts_each_decode(tmp_path):
    """The roofline of a sliding-window model needs each decode's context (no aggregate):
    `kvcli cluster --gpu h100-sxm --model gpt-oss-20b` was a ValueError traceback before any
    replica ran. One request of 1,000,000 output tokens decodes 999,999 steps of 1.77 ms:
    112,238 samples of 50 ms."""
    from kvcore.clock.registry import make_clock
    from kvcore.cluster import cost
    from kvcore.engine.options import ReplayOptions
    from kvcore.traces import read_trace

    p = tmp_path / "long.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 32, "output_length": 1000000, '
                 '"hash_ids": [0]}\n')
    cfg = ReplayOptions(model="gpt-oss-20b", gpu="h100-sxm")
    clock = make_clock(cfg)
    assert clock.needs_each
    assert cost.replica_visits(4, 1, read_trace(str(p)), cfg, 50.0, clock) \
        == (4 * (1 + 112_238), 112_238)
    r = runner.invoke(app, ["cluster", str(ROOT / "traces" / "shared-prefix.jsonl"), "--gpu",
                            "h100-sxm", "--model", "gpt-oss-20b", "--json"])
    assert r.exit_code == 0, r.output
    assert r.stdout.count('"requests": 64,') == 2     # (round robin: 64 a replica)


def test_a_cluster_tells_its_progress_request_by_request():
    from kvcore.cluster.run import ClusterOptions, run_cluster
    from kvcore.engine.options import ReplayOptions

    class Seen:
        def __init__(self) -> None:
            self.n, self.end = 0, None

        def __call__(self, n: int = 1) -> None:
            self.n += n

        def total(self, n: int) -> None:
            self.end = n

    seen = Seen()
    run_cluster(CHAT, ReplayOptions(num_blocks=512, mode="cache"),
                ClusterOptions(replicas=2, routers=(("round_robin", ()), ("random", ()))),
                progress=seen)
    assert seen.end == seen.n == 2 * 294


# -- 20,000 replicas took 22 s to stop after SIGTERM: rich drew the per-replica table, ~1 ms a
# -- row; a table that long is drawn as plain lines of the same look

def test_a_long_table_is_drawn_without_rich_in_the_same_box(monkeypatch):
    from rich.console import Console

    from kvcli import output_terminal as ot
    from kvcli.output import Table

    rows = [(f"r{i}", i * 1000, "1.00%", None) for i in range(5)]
    small = Table("title", ("replica", "tokens", "hit rate", "x"), rows, caption="cap")
    c = Console(file=io.StringIO(), width=200)
    ot.render_table(small, c)
    drawn = [line.rstrip() for line in c.file.getvalue().splitlines()]
    assert [line.rstrip() for line in ot.plain_lines(small)] == drawn[:-1] + ["cap"]
    # a row past the columns gets a headless column, as rich gives it (it raised a ValueError)
    wide = Table("w", ("a", "b"), [(1, 2, 3), (4,)])
    c = Console(file=io.StringIO(), width=200)
    ot.render_table(wide, c)
    assert [line.rstrip() for line in ot.plain_lines(wide)] == \
        [line.rstrip() for line in c.file.getvalue().splitlines()]

    def no_rich(_t):
        raise AssertionError("rich drew a long table")

    monkeypatch.setattr(ot, "rich_table", no_rich)
    big = Table("t", ("a", "b"), [(i, "x\ny") for i in range(ot.RICH_ROWS + 1)])
    c = Console(file=io.StringIO(), width=80)
    ot.render_table(big, c)
    lines = c.file.getvalue().splitlines()
    assert len(lines) == ot.RICH_ROWS + 1 + 5      # title, head (3), rows, bottom
    assert lines[-2] == "│ 1,000 │ x\\ny │"


# -- kvcli sweep --jobs 4 of four 8 GiB pools: each job fit alone, all four ran at once

def test_jobs_at_once_must_fit_together():
    check_parallel_jobs([GiB, GiB, 4 * GiB], 1, available=4 * GiB + WORKER_BYTES)
    with pytest.raises(InputError) as e:
        check_parallel_jobs([GiB, GiB, 4 * GiB], 2, available=5 * GiB)
    assert e.value.field == "jobs"
    assert e.value.message.startswith("2 jobs at once (one a worker process) need ~5.1 GiB")


def test_sweep_refuses_parallel_pools_past_memory_before_a_job_runs(monkeypatch, tmp_path):
    from kvcore import host_memory

    monkeypatch.setattr(host_memory, "available_bytes", lambda: 6 * GiB)
    results = tmp_path / "r.jsonl"
    r = runner.invoke(app, ["sweep", "--trace", CHAT, "--set",
                            "num_blocks=10000000,10000001,10000002", "--jobs", "3",
                            "--results", str(results)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.stderr.startswith("error: option --jobs: 3 jobs at once (one a worker process) "
                               "need ~11.2 GiB of host memory")
    assert not results.exists()


# -- an output of 10,000,000 tokens under a model's max_model_len of 131,072 was cut to fit
# -- without a word (vLLM's scheduler caps it the same: the trace's lengths read as what ran)

def test_outputs_past_max_model_len_are_said(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp":0,"input_length":100,"output_length":300,"hash_ids":[1]}\n'
                     '{"timestamp":1,"input_length":100,"output_length":20,"hash_ids":[2]}\n')
    r = runner.invoke(app, ["replay", str(trace), "--max-model-len", "256", "--json"])
    assert r.exit_code == 0, r.output
    assert (f"warning: 1 request(s) ask more tokens than max_model_len 256 (prompt + output; the "
            f"first, {trace}:1: 100 + 300): each stops there, as vLLM's scheduler stops it "
            "(length-capped), with fewer output tokens than the trace's (the requests' "
            "generated_tokens)") in r.stderr
    r = runner.invoke(app, ["replay", str(trace), "--max-model-len", "400", "--json"])
    assert "max_model_len" not in r.stderr


@pytest.mark.parametrize("held", [2, 50_000], ids=["streamed", "held"])
def test_a_refused_prompt_is_not_said_to_be_capped(tmp_path, monkeypatch, held):
    """A trace too long to hold (read as a stream) whose only request past max_model_len is a
    prompt the replay skips: nothing is capped, so nothing is said to be (the stream's warning
    named the longest request's total, the skipped prompt's); one that is capped is counted."""
    from kvcli.commands import replay as replay_command

    monkeypatch.setattr(replay_command, "HELD_REQUESTS", held)
    trace = tmp_path / "t.jsonl"
    lines = ['{"timestamp":0,"input_length":20,"output_length":2}',
             '{"timestamp":1,"input_length":200,"output_length":2}',
             '{"timestamp":2,"input_length":20,"output_length":2}']
    trace.write_text("\n".join(lines) + "\n")
    r = runner.invoke(app, ["replay", str(trace), "--max-model-len", "128", "--skip-bad",
                            "--json"])
    assert r.exit_code == 0, r.output
    assert "ask more tokens" not in r.stderr and "skipped 1 request(s)" in r.stderr
    trace.write_text("\n".join([*lines, '{"timestamp":3,"input_length":20,"output_length":200}'])
                     + "\n")
    r = runner.invoke(app, ["replay", str(trace), "--max-model-len", "128", "--skip-bad",
                            "--json"])
    assert r.exit_code == 0, r.output
    assert (f"warning: 1 request(s) ask more tokens than max_model_len 128 (prompt + output; the "
            f"first, {trace}:4: 20 + 200)") in r.stderr
