"""An output that is the run's input, or another output, by any name: refused before the work
(`kvcli.output_checks.check_distinct`). `kvcli replay T --events T` (or `--requests`, `--steps`,
`--metrics`; `kvcli cluster T --decisions T`) exited 0 and renamed its output over the trace it
had read; two outputs on one path kept only the one renamed last."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_hostile_options import refused, runner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
SP = ROOT / "traces" / "shared-prefix.jsonl"


@pytest.fixture
def trace(tmp_path) -> Path:
    path = tmp_path / "t.jsonl"
    shutil.copy(SP, path)
    return path


@pytest.mark.parametrize("command, flag", [("replay", "--events"), ("replay", "--requests"),
                                           ("replay", "--steps"), ("replay", "--metrics"),
                                           ("cluster", "--decisions"), ("cluster", "--metrics")])
def test_an_output_on_the_trace_is_refused(trace, command, flag):
    refused([command, str(trace), flag, str(trace)],
            f"error: option {flag}: {trace} is the trace, which this run reads: writing it "
            "would replace it")
    assert trace.read_bytes() == SP.read_bytes()


def test_any_name_of_the_trace_is_refused(trace, tmp_path):
    link, hard = tmp_path / "link.jsonl", tmp_path / "hard.jsonl"
    link.symlink_to(trace.name)
    os.link(trace, hard)
    odd = f"{tmp_path}/../{tmp_path.name}/t.jsonl"
    for name in (link, hard, odd):
        refused(["replay", str(trace), "--events", str(name)],
                f"error: option --events: {name} is the trace, which this run reads")
    assert trace.read_bytes() == SP.read_bytes()


def test_stdin_opened_on_the_output_is_refused(trace):
    """`kvcli replay - --events T < T`: the shell opened the trace as stdin."""
    with open(trace, "rb") as stdin:
        res = subprocess.run([sys.executable, "-m", "kvcli", "replay", "-", "--events",
                              str(trace)], stdin=stdin, capture_output=True, text=True,
                             cwd=ROOT, timeout=120, check=False)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == (f"error: option --events: {trace} is the trace, which this run "
                          "reads: writing it would replace it\n")
    assert trace.read_bytes() == SP.read_bytes()


@pytest.mark.parametrize(("args", "out", "fd3"), [
    (["replay", "/dev/stdin", "--events", "/dev/stdin"], "--events", ""),
    (["replay", "-", "--events", "/proc/self/fd/0"], "--events", ""),
    (["cluster", "/dev/stdin", "--decisions", "/dev/fd/0"], "--decisions", ""),
    (["replay", "TRACE", "--requests", "/dev/fd/3"], "--requests", "3<"),
    (["replay", "TRACE", "--steps", "/dev/fd/3"], "--steps", "3<>"),
])
def test_a_descriptor_naming_the_trace_is_refused(trace, args, out, fd3):
    """A descriptor's name is written in place, never replaced, but opening it for writing
    truncated the file behind it: the trace (exit 0, the trace an event stream)."""
    def run(redirect: str, *argv: str) -> subprocess.CompletedProcess:
        cmd = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "kvcli", *argv))
        return subprocess.run(["bash", "-c", f"{cmd} {redirect}"], capture_output=True,
                              text=True, cwd=ROOT, timeout=120, check=False)

    t = shlex.quote(str(trace))
    res = run(f"< {t} {fd3}{t}" if fd3 else f"< {t}",
              *(str(trace) if a == "TRACE" else a for a in args))
    assert res.returncode == 2 and res.stdout == "", res.stderr
    assert res.stderr.startswith(f"error: option {out}: ") and res.stderr.endswith(
        " is the trace, which this run reads: writing it would truncate it\n"), res.stderr
    assert trace.read_bytes() == SP.read_bytes()
    # a descriptor on another output's file: the rename would unlink what it wrote
    other = shlex.quote(str(trace.with_name("other.jsonl")))
    res = run(f"3> {other}", args[0], str(trace), out, "/dev/fd/3",
              "--metrics", str(trace.with_name("other.jsonl")))
    assert res.returncode == 2 and res.stderr.endswith(
        "'s output: one would replace the other\n") and " is also --" in res.stderr, res.stderr
    # (a descriptor on another file is written in place, as before)
    dest = trace.with_name("out.jsonl")
    res = run(f"3> {shlex.quote(str(dest))}", args[0], str(trace), out, "/dev/fd/3")
    assert res.returncode == 0 and dest.read_bytes().count(b"\n") > 10, res.stderr


def test_a_model_config_as_output_is_refused(trace, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text("{}")
    refused(["replay", str(trace), "--model-config", str(cfg), "--requests", str(cfg)],
            f"error: option --requests: {cfg} is --model-config's file, which this run reads")
    assert cfg.read_text() == "{}"


def test_two_outputs_on_one_file_are_refused(trace, tmp_path):
    out = tmp_path / "out.jsonl"
    refused(["replay", str(trace), "--events", str(out), "--steps", str(out)],
            f"error: option --steps: {out} is also --events's output: one would replace the "
            "other")
    refused(["cluster", str(trace), "--decisions", str(out), "--metrics", str(out)],
            f"error: option --metrics: {out} is also --decisions's output")
    assert not out.exists()
    # outputs written in place (a device) may share it; distinct files are fine
    res = runner.invoke(app, ["replay", str(trace), "--events", os.devnull, "--steps",
                              os.devnull, "--requests", str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert out.read_bytes().count(b"\n") > 10


def test_a_folder_output_on_a_file_outputs_path_is_refused(trace, tmp_path):
    # found by a random pass over the options: `cluster --events X --decisions X` wrote the
    # events folder, then died renaming the decisions over it (IsADirectoryError, exit 1, a
    # traceback); `--plot X --decisions X` and `sweep --plot X --results X` ran the whole
    # work, wrote the file, then failed making the plot folder (exit 2, the file left)
    x = tmp_path / "x"
    refused(["cluster", str(trace), "--events", str(x), "--decisions", str(x)],
            f"error: option --events: {x} is also --decisions's output, a file: it cannot be "
            "a folder too")
    refused(["cluster", str(trace), "--plot", str(x), "--decisions", str(x)],
            "error: option --plot: ")
    refused(["cluster", str(trace), "--events", str(x / "sub"), "--metrics", str(x)],
            f"error: option --events: {x / 'sub'} lies under --metrics's output file {x}: "
            "that cannot be a folder too")
    refused(["sweep", "--trace", str(trace), "--set", "num_blocks=200,300", "--plot", str(x),
             "--results", str(x)],
            f"error: option --plot: {x} is also --results's output, a file")
    assert not x.exists()
    # two folders may be one, or one under the other: each writes its own files' names
    res = runner.invoke(app, ["cluster", str(trace), "--num-blocks", "300", "--events", str(x),
                              "--plot", str(x / "p")])
    assert res.exit_code == 0, res.output
    assert (x / "p" / "cluster.png").exists() and (x / "round_robin").is_dir()


@pytest.mark.parametrize("args", [["replay", "{t}", "--requests", "/dev/stdout", "--json"],
                                  ["replay", "{t}", "--steps", "/dev/fd/1"],
                                  ["replay", "{t}", "--events", "/dev/stdout"],
                                  ["cluster", "{t}", "--decisions", "/dev/stdout", "--json"]])
def test_an_output_on_the_commands_own_stdout_is_refused(trace, tmp_path, args):
    """`--requests /dev/stdout --json` put the request lines inside the JSON document (a pipe
    or a file on stdout: a terminal shows both, as asked)."""
    args = [a.replace("{t}", str(trace)) for a in args]
    flag, path = args[2], args[3]
    res = subprocess.run([sys.executable, "-m", "kvcli", *args], capture_output=True,
                         text=True, cwd=ROOT, timeout=120, check=False)
    assert res.returncode == 2 and res.stdout == ""
    hint = ("give another file, or -: the events on stdout, the summary on stderr"
            if flag == "--events" else "give another file")
    assert res.stderr == (f"error: option {flag}: {path} is this command's stdout, where its "
                          f"result goes: the two would mix ({hint})\n")
    # stdout on /dev/null or a terminal: nothing to spoil
    res = subprocess.run([sys.executable, "-m", "kvcli", *args], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    # a file on stdout is the same file by its name
    out = tmp_path / "out.txt"
    with open(out, "wb") as f:
        res = subprocess.run([sys.executable, "-m", "kvcli", *args[:3], str(out), *args[4:]],
                             stdout=f, stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=120,
                             check=False)
    assert res.returncode == 2 and "is this command's stdout" in res.stderr


def test_calibrate_output_on_its_own_stdout_says_its_dash():
    res = subprocess.run([sys.executable, "-m", "kvcli", "calibrate", "--gpu", "--model",
                          "llama-3.1-8b", "-o", "/dev/stdout", "--json"], capture_output=True,
                         text=True, cwd=ROOT, timeout=120, check=False)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == ("error: option --output: /dev/stdout is this command's stdout, where "
                          "its result goes: the two would mix (give another file, or -: it on "
                          "stdout, the summary on stderr)\n")


@pytest.mark.parametrize("command, args, said", [
    ("replay", ["-", "--model-config", "-"], "--model-config's file and the trace"),
    ("cluster", ["-", "--model-config", "-"], "--model-config's file and the trace"),
    ("stats", ["-", "--model-config", "-"], "--model-config's file and the trace"),
    ("replay", ["t", "--model-config", "-", "--calibration", "-"],
     "--calibration's file and --model-config's file"),
    ("script", ["-", "--model-config", "-"], "--model-config's file and the op script")])
def test_two_inputs_on_one_stdin_are_refused(command, args, said):
    # (the first reader took stdin to its end: the second said "<stdin>:1: not valid JSON")
    r = runner.invoke(app, [command, *[str(SP) if a == "t" else a for a in args]],
                      input=SP.read_text())
    said = f"error: {said} are both - (stdin), which can be read once: save one of them to a file"
    assert (r.exit_code, r.stderr) == (2, said + "\n")
