"""`kvcli sweep report` on a results file that repeats a job (two sweeps' files put together):
each job's first line is shown, and the repeats are said (they were dropped without a word,
one with another result included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError

runner = CliRunner()
PREFIX = str(Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl")


def test_repeated_job_lines_are_said(tmp_path):
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=300,600",
                            "--results", str(res)])
    assert r.exit_code == 0, r.output
    lines = res.read_text().splitlines()
    other = json.loads(lines[0])
    other["result"]["hit_rate"] = 0.99
    res.write_text("\n".join([*lines, lines[1], json.dumps(other)]) + "\n")
    r = runner.invoke(app, ["sweep", "report", str(res), "--json"])
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines()[0] == (
        f"warning: {res}: 2 line(s) repeat a job already read, 1 with another result than its "
        "first; each job's first line is the one shown")
    first = sorted((json.loads(x) for x in lines), key=lambda d: d["index"])
    assert [j["result"]["hit_rate"] for j in json.loads(r.stdout)["jobs"]] == [
        d["result"]["hit_rate"] for d in first]
    # a resume reads the file too, and says it
    r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=300,600",
                            "--results", str(res), "--resume"])
    assert r.exit_code == 0 and r.stderr.startswith(f"warning: {res}: 2 line(s) repeat")


def test_the_plots_legends_say_default_as_the_table_does(tmp_path, monkeypatch):
    # (a line of another grid, without the key, was 'block_size=None' in the legends)
    import pytest

    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path, sets in ((a, ["num_blocks=300,600", "max_num_seqs=8,32"]),
                       (b, ["block_size=16,32", "num_blocks=600"])):
        args = ["sweep", "--trace", PREFIX, *(x for s in sets for x in ("--set", s)),
                "--results", str(path)]
        assert runner.invoke(app, args).exit_code == 0
    mixed = tmp_path / "mix.jsonl"
    mixed.write_text(a.read_text() + b.read_text())
    labels: list[str] = []
    real = Axes.plot
    monkeypatch.setattr(Axes, "plot", lambda self, *x, **kw: labels.append(kw.get("label"))
                        or real(self, *x, **kw))
    r = runner.invoke(app, ["sweep", "report", str(mixed), "--plot", str(tmp_path / "p")])
    assert r.exit_code == 0, r.output
    assert "block_size=default, max_num_seqs=8" in labels and not any(
        "None" in (x or "") for x in labels)
    assert " default " in r.stdout


def test_a_plot_folder_that_cannot_be_made_is_refused_before_the_jobs(tmp_path):
    # (access() passes /proc for root: the sweep ran every job, then 'cannot create the folder')
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=300,600",
                            "--results", str(res), "--plot", "/proc/kvcli-no-such-folder"])
    assert r.exit_code == 2 and r.stderr.startswith("error: option --plot: cannot create "
                                                     "/proc/kvcli-no-such-folder: "), r.stderr
    assert not res.exists()
    from kvcli import output

    output.check_output(str(tmp_path / "a" / "b"), "plot", folder=True)
    assert list(tmp_path.iterdir()) == []        # the probe leaves nothing
    # an existing folder root may not write in (access() says yes), and a dangling link (the
    # writers make the link's path itself: 'File exists' after the work, or a traceback)
    with pytest.raises(InputError) as err:
        output.check_output("/proc", "plot", folder=True)
    assert err.value.message.startswith("cannot write in /proc: ")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "d")
    with pytest.raises(InputError, match="is a link to .*nowhere/d, which does not exist"):
        output.check_output(str(tmp_path / "dangling"), "events", folder=True)


def test_a_line_the_sweep_finishes_while_it_is_read_ends_the_reading(tmp_path, monkeypatch):
    # `sweep report` on a sweep still running: the file's last line had no newline yet when
    # read, then the writer finished it before the next read, whose rest ("...}\n") was read
    # as a line of its own: "not a JSON line" (one read of the whole file never saw it)
    from kvcore.sweep import results

    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=300,600",
                            "--results", str(res)])
    assert r.exit_code == 0, r.output
    first, second = res.read_bytes().splitlines(keepends=True)
    real = results.bounded_lines

    def racing(name, stream):
        for raw in real(name, stream):
            yield raw
            if not raw.endswith(b"\n"):
                yield second[len(raw):]     # the writer's rest of that line, read next
    monkeypatch.setattr(results, "bounded_lines", racing)
    res.write_bytes(first + second[:40])
    got = results.read_results(str(res))
    assert [d["job_id"] for d in got.lines] == [json.loads(first)["job_id"]]
    assert got.partial_tail
