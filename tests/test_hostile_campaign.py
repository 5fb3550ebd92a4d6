"""Found by a hostile-input campaign (6,781 cases over every command): each was a traceback, a
hang, a false error or a write where none belonged; each is now one line, exit 2 (or the run it
should be)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
PREFIX = str(ROOT / "traces" / "shared-prefix.jsonl")
TINY = str(ROOT / "tests" / "data" / "calibration" / "tiny-llama.config.json")
runner = CliRunner()
BIG = str(2**64)


def _one_line(args: list[str], line: str) -> None:
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.stderr.strip().splitlines() == [line]


@pytest.mark.parametrize(("args", "line"), [
    # (taken, run, then the JSON writer's TypeError: Integer exceeds 64-bit range)
    (["replay", PREFIX, "--json", "--block-size", BIG],
     (f"error: option --block-size: must be a 64-bit integer (below 2**63 in size), got {BIG} "
     "(kvcli replay -h for help)")),
    (["stats", PREFIX, "--window-requests", BIG],
     (f"error: option --window-requests: must be a 64-bit integer (below 2**63 in size), got "
     f"{BIG} (kvcli stats -h for help)")),
    (["cluster", PREFIX, "--seed", f"-{BIG}"],
     (f"error: option --seed: must be a 64-bit integer (below 2**63 in size), got -{BIG} "
     "(kvcli cluster -h for help)")),
])
def test_integers_past_64_bits_are_refused_up_front(args, line):
    import subprocess
    import sys

    # (the installed command's form: typer's usage errors are worded by kvcli.app.main)
    proc = subprocess.run([sys.executable, "-c", "from kvcli.app import main; main()", *args],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [line] and proc.stdout == ""


def _with_config(tmp_path: Path, config: dict, name: str = "t.jsonl") -> str:
    p = tmp_path / name
    p.write_text(json.dumps({"config": config}) + "\n" + Path(PREFIX).read_text())
    return str(p)


def test_config_line_values_of_the_wrong_size_or_type(tmp_path):
    t = _with_config(tmp_path, {"block_size": 2**64 - 1})
    _one_line(["replay", t], f"error: {t}:1: field 'config.block_size': must be a 64-bit integer"
              f" (below 2**63 in size), got {2**64 - 1}")
    t = _with_config(tmp_path, {"block_size": 2**63 - 1})
    # (the curve's numpy overflowed: OverflowError traceback)
    _one_line(["curve", t], f"error: {t}:1: field 'config.block_size': must be at most "
              "1,048,576, got 9,223,372,036,854,775,807")
    t = _with_config(tmp_path, {"watermark": "0.01"})      # (a TypeError traceback)
    _one_line(["replay", t], f"error: {t}:1: field 'config.watermark': must be in [0, 1), got "
              "0.01")
    # neither --max-num-batched-tokens nor --max-num-seqs was given: the config line's value
    # is named (it was "option --max-num-batched-tokens")
    t = _with_config(tmp_path, {"max_num_seqs": 4096})
    _one_line(["replay", t], f"error: {t}:1: field 'config.max_num_seqs': max_num_batched_tokens "
              "2048 is below max_num_seqs 4096: vLLM refuses this at start-up (left unset, "
              "max_num_seqs follows the budget down)")
    res = tmp_path / "r.jsonl"
    _one_line(["sweep", "--trace", PREFIX, "--set", f"block_size=16,{BIG}", "--results",
               str(res)], f"error: option --set: block_size: must be a 64-bit integer (below "
                          f"2**63 in size), got {BIG}")
    assert not res.exists()                         # (its first job had been appended)


def test_a_hash_id_whose_tokens_pass_64_bits_writes_its_events(tmp_path):
    t = tmp_path / "h.jsonl"
    t.write_text(json.dumps({"timestamp": 0, "input_length": 20, "output_length": 2,
                             "hash_ids": [2**64 - 1, 1], "block_size": 16}) + "\n")
    # (replay --events: TypeError from the event writer, after the replay, both formats): a
    # block's tokens are id x 16 + offset, taken modulo 2^64
    for fmt in ("jsonl", "vllm"):
        ev = tmp_path / f"e.{fmt}.jsonl"
        r = runner.invoke(app, ["replay", str(t), "--events", str(ev), "--events-format", fmt])
        assert r.exit_code == 0, r.output
    admit = next(json.loads(x) for x in (tmp_path / "e.jsonl.jsonl").read_text().splitlines()
                 if '"admit"' in x)
    assert admit["first_tokens"][0] == [(2**64 - 1) * 16 % 2**64, 1 * 16]
    stored = [e for x in (tmp_path / "e.vllm.jsonl").read_text().splitlines()
              for e in json.loads(x)["events"] if "token_ids" in e]
    assert stored[0]["token_ids"][:2] == [(2**64 - 16) + 0, (2**64 - 16) + 1]
    assert runner.invoke(app, ["stats", str(tmp_path / "e.jsonl.jsonl")]).exit_code == 0


def test_a_json_output_of_an_inputs_huge_free_field_is_written(tmp_path):
    # a calibration file's gpu.sms is carried into `clock.measured_on` as it is: orjson's
    # TypeError after the work; the stdlib's writer takes it
    doc = json.loads((ROOT / "tests" / "data" / "calibration" /
                      "tiny-cpu.calibration.json").read_text())
    doc["gpu"]["sms"] = 2**64
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps(doc))
    r = runner.invoke(app, ["clock", "explain", "--model-config", TINY, "--calibration",
                            str(cal), "--case", "d=3*1@40", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["cases"][0]["clock"]["measured_on"]["sms"] == 2**64
    # a model config's number the replay uses (max_model_len from it) is refused
    cfg = json.loads(Path(TINY).read_text())
    cfg["max_position_embeddings"] = 2**64
    p = tmp_path / "big.json"
    p.write_text(json.dumps(cfg))
    _one_line(["replay", PREFIX, "--model-config", str(p), "--json"],
              f"error: {p}: field 'max_position_embeddings': expected a non-negative integer "
              f"below 2^63, got {2**64}")


def test_outputs_that_cannot_be_what_they_are_asked_to_be(tmp_path):
    _one_line(["cluster", PREFIX, "--events", "/dev/null"],
              "error: option --events: /dev/null is a file, not a folder")
    _one_line(["stats", PREFIX, "--plot", "/dev/null"],      # (it ran the whole job first)
              "error: option --plot: /dev/null is a file, not a folder")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:                                        # ('' was the path '.': files in the cwd)
        _one_line(["cluster", PREFIX, "--events", ""], "error: option --events: an empty path")
        assert list(tmp_path.iterdir()) == []
    finally:
        os.chdir(cwd)
    cfg = tmp_path / "cfg.json"
    cfg.write_text(Path(TINY).read_text())
    _one_line(["calibrate", "--gpu", "--device", "cpu", "--grid", "tiny", "--model-config",
               str(cfg), "-o", str(cfg)],
              f"error: option --output: {cfg} is the model config, which this run reads: "
              "writing it would replace it")
    assert cfg.read_text() == Path(TINY).read_text()


def test_a_rate_too_small_for_a_float_gap():
    # (IndexError: tuple index out of range)
    _one_line(["gen", "b2b", "--requests", "20", "--tenants", "2", "--users", "2", "--qps",
               "1e-320"], "error: option --qps: the last request would arrive at inf ms, past "
                          "the limit of 1e+13 ms a trace's timestamps have (about 317 years)")


def test_sweep_report_of_hand_edited_values(tmp_path):
    res = tmp_path / "r.jsonl"
    assert runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=200,300",
                               "--results", str(res)]).exit_code == 0
    lines = sorted((json.loads(x) for x in res.read_text().splitlines()),
                   key=lambda d: d["index"])        # (file order is finishing order)
    lines[0]["result"]["hit_rate"] = "0.5"          # (ValueError: Unknown format code 'f')
    lines[1]["result"]["latency"] = "x"             # (AttributeError)
    lines[1]["config"]["num_blocks"] = [1, 2]       # (--plot: unhashable type)
    res.write_text("".join(json.dumps(d) + "\n" for d in lines))
    r = runner.invoke(app, ["sweep", "report", str(res), "--json", "--plot",
                            str(tmp_path / "plots")])
    assert r.exit_code == 0, r.output
    jobs = json.loads(r.stdout)["jobs"]
    assert jobs[0]["metrics"]["hit_rate"] is None
    assert jobs[1]["metrics"]["ttft_p99_ms"] is None


def _fifo(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "fifo"
    os.mkfifo(path)

    def write() -> None:
        with open(path, "wb") as f:
            f.write(data)
    threading.Thread(target=write, daemon=True).start()
    return str(path)


def test_a_named_pipe_is_read_once(tmp_path):
    # stats sniffed the pipe, closed it and opened it again: "empty trace" (a process
    # substitution) or blocked for ever (a FIFO)
    want = json.loads(runner.invoke(app, ["stats", PREFIX, "--json"]).stdout)
    r = runner.invoke(app, ["stats", _fifo(tmp_path, Path(PREFIX).read_bytes()), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["reuse"] == want["reuse"] and got["source"]["requests"] == 128
    os.remove(tmp_path / "fifo")
    r = runner.invoke(app, ["curve", _fifo(tmp_path, Path(PREFIX).read_bytes()), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["ceiling"] == json.loads(
        runner.invoke(app, ["curve", PREFIX, "--json"]).stdout)["ceiling"]


def test_a_spec_path_option_is_relative_to_the_spec(tmp_path, monkeypatch):
    sp = tmp_path / "sp"
    sp.mkdir()
    (sp / "mc.json").write_text(Path(TINY).read_text())
    (sp / "t.jsonl").write_text(Path(PREFIX).read_text())
    spec = sp / "rel.toml"
    spec.write_text('traces = ["t.jsonl"]\n[options]\nmodel_config = "mc.json"\n'
                    '[grid]\nnum_blocks = [300, 400]\n')
    monkeypatch.chdir(tmp_path)                     # ('mc.json: no such file' from here)
    r = runner.invoke(app, ["sweep", "sp/rel.toml", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["jobs_finished"] == 2
    spec.write_text('traces = ["t.jsonl"]\n[options]\nmodel_config = "nope.json"\n'
                    '[grid]\nnum_blocks = [300, 400]\n')
    _one_line(["sweep", "sp/rel.toml", "--results", "x.jsonl"],
              "error: sp/rel.toml:3: field 'options.model_config': sp/nope.json does not "
              "exist (a path in a spec is relative to the spec's folder)")


@pytest.mark.parametrize(("args", "line"), [
    # (each ran or blocked silently: 23 us a step for 10^11 steps; 30 years a simulated s)
    (["--kv-offloading-size", "0.5", "--offload-store-steps", "99999999999"],
     "error: option --offload-store-steps: must be at most 100,000, got 99999999999"),
    (["--realtime", "1e-9"], ("error: option --realtime: must be at least 0.001 (a thousandth "
                             "of the simulated pace), got 1e-09")),
    (["--kv-events-endpoint", "tcp://*:5599", "--kv-events-wait-s", "1e308"],
     "error: option --kv-events-wait-s: must be at most 86,400 s (a day), got 1e+308"),
])
def test_runs_that_would_not_end_are_refused(args, line):
    _one_line(["replay", PREFIX, *args], line)


def test_a_signal_during_an_outputs_queue_put_lands_after_it(tmp_path):
    # SIGHUP raised inside Queue.put left the queue's lock taken: the interrupted replay's
    # own close then waited on it for ever (seen once: the process sat in futex waits for an
    # hour). The put now runs with signals held; the signal lands once the chunk is queued.
    import signal

    from kvcli.output_thread import ThreadedRaw

    class Boom(Exception):
        pass

    def raise_boom(signum, frame):
        raise Boom

    fd = os.open(tmp_path / "out.bin", os.O_WRONLY | os.O_CREAT)
    raw = ThreadedRaw(fd, "out.bin")
    real_put = raw.chunks.put

    def put_with_a_signal(item, *a, **kw):
        os.kill(os.getpid(), signal.SIGHUP)      # arrives inside the put
        real_put(item, *a, **kw)

    old = signal.signal(signal.SIGHUP, raise_boom)
    try:
        raw.chunks.put = put_with_a_signal       # type: ignore[method-assign]
        with pytest.raises(Boom):
            raw.write(b"whole chunk")
        raw.chunks.put = real_put                # type: ignore[method-assign]
    finally:
        signal.signal(signal.SIGHUP, old)
    raw.close()                                  # (it waited for ever on the queue's lock)
    assert (tmp_path / "out.bin").read_bytes() == b"whole chunk"
