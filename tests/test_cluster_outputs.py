"""`kvcli cluster --events DIR` and the files it writes there: `--decisions` (or `--metrics`)
on one of them replaced replica 0's stream with decision lines, exit 0; a run with fewer
replicas than an earlier one in the same folder left the earlier third stream, which
`kvcli stats DIR` then counted (170 requests of a 128-request trace)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
TRACE = str(Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl")
RUN = ["cluster", TRACE, "--router", "round_robin", "--num-blocks", "512"]


def test_an_output_on_a_stream_of_the_events_folder_is_refused(tmp_path):
    ev = tmp_path / "ev"
    (ev / "round_robin").mkdir(parents=True)
    for flag, name in (("--decisions", "replica-0.events.jsonl"),
                       ("--metrics", "replica-1.vllm.jsonl")):
        target = ev / "round_robin" / name
        r = runner.invoke(app, [*RUN, "--replicas", "2", "--events", str(ev), flag, str(target)])
        assert (r.exit_code, r.stdout) == (2, "")
        assert r.stderr == (f"error: option --events: {target} is also {flag}'s output: one "
                            "would replace the other\n")
    assert list((ev / "round_robin").iterdir()) == []


def test_streams_of_an_earlier_run_with_more_replicas_are_refused(tmp_path):
    ev = tmp_path / "ev"
    assert runner.invoke(app, [*RUN, "--replicas", "3", "--events", str(ev)]).exit_code == 0
    r = runner.invoke(app, [*RUN, "--replicas", "2", "--events", str(ev)])
    assert (r.exit_code, r.stdout) == (2, "")
    folder = ev / "round_robin"
    assert r.stderr == (f"error: option --events: {folder} holds replica-2.events.jsonl, "
                        "replica-2.vllm.jsonl of an earlier run with more replicas than this "
                        "one's 2: the folder would mix two runs' streams (kvcli stats DIR reads "
                        "every replica-K.events.jsonl as one run's); remove them or write "
                        "elsewhere\n")
    # the same replicas again, or more, replace the earlier streams
    for n in ("3", "4"):
        assert runner.invoke(app, [*RUN, "--replicas", n, "--events", str(ev)]).exit_code == 0
    r = runner.invoke(app, ["stats", str(folder), "--json"])
    assert r.exit_code == 0 and len(json.loads(r.stdout)["replicas"]) == 4


def test_an_idle_replicas_stream_ran_no_step(tmp_path):
    # a replica the router sent nothing has a header and an `end` at step 0: `kvcli stats`
    # said 1 step (and 1 sampled) against the cluster's 0
    ev = tmp_path / "ev"
    chat = Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl"
    head = tmp_path / "t.jsonl"
    head.write_text("".join(chat.read_text().splitlines(keepends=True)[:30]))
    r = runner.invoke(app, ["cluster", str(head), "--router", "llmd", "--replicas", "3",
                            "--num-blocks", "2000", "--events", str(ev), "--json"])
    assert r.exit_code == 0, r.output
    steps = [x["steps"] for x in json.loads(r.stdout)["routers"][0]["replicas"]]
    r = runner.invoke(app, ["stats", str(ev / "llmd"), "--json"])
    assert r.exit_code == 0, r.output
    reps = json.loads(r.stdout)["replicas"]
    assert steps[:2] == [0, 0] and steps[2] > 0
    assert [x["source"]["steps"] for x in reps] == steps
    assert [x["memory"]["steps_sampled"] for x in reps] == steps
