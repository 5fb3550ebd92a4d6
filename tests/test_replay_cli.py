"""`kvcli replay` end to end: outputs, bad input (exit 2, no traceback, no file), Ctrl-C (130)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "traces" / "shared-prefix.jsonl"
SCHED = ROOT / "tests" / "data" / "sched_cases"     # see tests/data/README.md
runner = CliRunner()


def invoke(*args, input=None):
    return runner.invoke(app, ["replay", *map(str, args)], input=input)


def write(tmp_path, lines, name="t.jsonl"):
    p = tmp_path / name
    p.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return p


def mc(n_in, n_out=4, ts=0, ids=None):
    return {"timestamp": ts, "input_length": n_in, "output_length": n_out,
            "hash_ids": ids if ids is not None else list(range(-(-n_in // 512)))}


def test_json_summary_and_outputs(tmp_path):
    ev, rq, st = tmp_path / "ev.jsonl", tmp_path / "rq.jsonl", tmp_path / "st.jsonl"
    res = invoke(SCHED / "b_preemption.trace.jsonl", "--arrivals", "step", "--json",
                 "--events", ev, "--requests", rq, "--steps", st)
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    for key in ("requests", "rejected", "prompt_tokens", "hit_tokens", "hit_rate",
                "request_hit_rate_mean", "preemptions", "evictions", "peak_usage", "config"):
        assert key in d
    assert (d["requests"], d["prompt_tokens"], d["hit_tokens"], d["preemptions"]) == \
        (6, 406, 160, 6)
    assert d["config"]["num_blocks"] == 40 and d["config"]["max_model_len"] == 512
    lines = ev.read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "header" and json.loads(lines[-1])["kind"] == "end"
    assert len(rq.read_text().splitlines()) == 6
    assert json.loads(st.read_text().splitlines()[0])["step"] == 0
    assert not list(tmp_path.glob(".*.tmp"))


def test_flags_override_the_config_line():
    res = invoke(SCHED / "b_preemption.trace.jsonl", "--arrivals", "step", "--json",
                 "--num-blocks", "400")
    d = json.loads(res.stdout)
    assert d["config"]["num_blocks"] == 400 and d["preemptions"] == 0


def test_events_to_stdout_sends_the_summary_to_stderr():
    res = invoke(SAMPLE, "--mode", "cache", "--events", "-", "--json")
    assert res.exit_code == 0
    first = json.loads(res.stdout.splitlines()[0])
    assert first["kind"] == "header" and first["mode"] == "cache"
    assert all(json.loads(x)["kind"] for x in res.stdout.splitlines())
    assert '"hit_rate"' in res.stderr


def test_vllm_events_format(tmp_path):
    ev = tmp_path / "ev.jsonl"
    res = invoke(SCHED / "e_preemption_events.trace.jsonl", "--arrivals", "step",
                 "--events", ev, "--events-format", "vllm")
    assert res.exit_code == 0
    batch = json.loads(ev.read_text().splitlines()[0])
    assert set(batch) == {"ts", "events", "data_parallel_rank"}
    assert batch["events"][0]["type"] == "BlockStored"


def test_stdin_trace():
    res = invoke("-", "--mode", "cache", "--json", input=SAMPLE.read_text())
    d = json.loads(res.stdout)
    assert res.exit_code == 0 and d["requests"] == 128
    # cache mode runs no steps: no mean usage (it read 0.0), as its latency is null
    assert d["mean_usage"] is None and d["latency"] is None and d["peak_usage"] > 0


@pytest.mark.parametrize("lines, args, where", [
    (['{"timestamp": 0,'], [], ":1: malformed JSON"),
    ([mc(100), {"timestamp": 0, "output_length": 3, "hash_ids": [1]}], [],
     ":2: field 'input_length': missing"),
    ([mc(100), mc(100, ids=[1, 2])], [], ":2: field 'hash_ids'"),
    ([mc(100), {**mc(100), "output_length": -1}], [], ":2: field 'output_length'"),
    ([mc(100), mc(700)], ["--max-model-len", "600"], ":2: field 'input_length'"),
    ([mc(100), mc(700)], ["--max-model-len", "600", "--mode", "cache"],
     ":2: field 'input_length'"),
    ([mc(100), mc(600)], ["--num-blocks", "5", "--mode", "cache"],
     ":1: field 'num_blocks': no request fits"),
    ([mc(100), mc(600)], ["--num-blocks", "5"], ":1: field 'num_blocks': request '0' can never"),
    # every prompt too long: named num_blocks, though max_model_len made it never fit
    ([mc(700), mc(800)], ["--max-model-len", "600", "--skip-bad"],
     ":1: field 'input_length': no request fits: prompt of 700 tokens >= max_model_len 600"),
    ([], [], ":1: empty trace"),
])
def test_bad_input_exits_2_without_output(tmp_path, lines, args, where):
    p = write(tmp_path, lines)
    ev = tmp_path / "events.jsonl"
    res = invoke(p, "--events", ev, "--requests", tmp_path / "rq.jsonl", *args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.stderr.startswith("error: ") and where in res.stderr, res.stderr
    assert list(tmp_path.iterdir()) == [p]          # no output file, no temporary file


def test_engine_request_that_never_fits_stops_unless_skip_bad(tmp_path):
    # 9 blocks of 16 tokens = 128 usable tokens; the second request needs 150 + 20 - 1.
    p = write(tmp_path, [mc(100, 4, ids=[0]), mc(150, 20, ts=1, ids=[1]), mc(50, 4, ts=2,
                                                                             ids=[2])])
    res = invoke(p, "--num-blocks", "9")
    assert res.exit_code == 2 and f"{p}:2: " in res.stderr and "--skip-bad" in res.stderr
    res = invoke(p, "--num-blocks", "9", "--skip-bad", "--json")
    assert res.exit_code == 0
    d = json.loads(res.stdout)
    assert (d["requests"], d["rejected"], d["finished"]) == (3, 1, 2)
    assert d["prompt_tokens"] == 150                 # rejected requests are not counted


def test_cache_mode_skips_and_warns(tmp_path):
    p = write(tmp_path, [mc(100, ids=[0]), mc(600, ids=[1, 2]), mc(100, ids=[0])])
    res = invoke(p, "--mode", "cache", "--block-size", "16", "--num-blocks", "10", "--json")
    assert res.exit_code == 0
    d = json.loads(res.stdout)
    assert (d["rejected"], d["prompt_tokens"], d["hit_tokens"]) == (1, 200, 96)
    assert "warning: skipped 1 request" in res.stderr and f"{p}:2" in res.stderr


def test_ctrl_c_keeps_a_complete_prefix(tmp_path, monkeypatch):
    # Ctrl-C arrives while the 40th request finishes: every file given by path keeps what was
    # replayed, ends with a complete line and an interrupted record; exit code 130.
    import kvcli.output as out

    real_progress = out.progress

    def progress(total, desc, *more):
        ctx = real_progress(total, desc, *more)

        class Wrap:
            def __enter__(self):
                inner = ctx.__enter__()
                count = [0]

                def advance(n=1):
                    count[0] += n
                    if count[0] == 40:
                        raise KeyboardInterrupt
                    inner(n)
                advance.output_tokens = inner.output_tokens
                return advance

            def __exit__(self, *exc):
                return ctx.__exit__(*exc)
        return Wrap()

    monkeypatch.setattr(out, "progress", progress)
    ev, rq, st = tmp_path / "ev.jsonl", tmp_path / "rq.jsonl", tmp_path / "st.jsonl"
    res = invoke(SAMPLE, "--events", ev, "--requests", rq, "--steps", st, "--json")
    assert res.exit_code == 130
    assert json.loads(res.stdout)["interrupted"] is True
    for f in (ev, rq, st):
        text = f.read_text()
        assert text.endswith("\n")
        last = json.loads(text.splitlines()[-1])
        assert last.get("kind") == "interrupted" or last == {"interrupted": True}
    finished = [json.loads(x) for x in rq.read_text().splitlines()[:-1]]
    assert sum(1 for r in finished if r["finish_step"] is not None) == 40
    assert not list(tmp_path.glob(".*.tmp"))


def test_cache_salt_and_lora_separate_hash_domains(tmp_path):
    prompt = list(range(1, 65))
    lines = [{"id": "a", "prompt_token_ids": prompt, "output_length": 1},
             {"id": "b", "prompt_token_ids": prompt, "output_length": 1, "cache_salt": "x"},
             {"id": "c", "prompt_token_ids": prompt, "output_length": 1, "cache_salt": "x"},
             {"id": "d", "prompt_token_ids": prompt, "output_length": 1, "lora": "sql"},
             {"id": "e", "prompt_token_ids": prompt, "output_length": 1}]
    p = write(tmp_path, lines)
    rq = tmp_path / "rq.jsonl"
    res = invoke(p, "--mode", "cache", "--requests", rq)
    assert res.exit_code == 0, res.output
    hits = {r["id"]: r["hit_tokens"] for r in map(json.loads, rq.read_text().splitlines())}
    # 64 tokens = 4 blocks; the last-token rule leaves 3 to hit, within the same domain only.
    assert hits == {"a": 0, "b": 0, "c": 48, "d": 0, "e": 48}


def test_step_arrivals_keep_file_order_within_a_step(tmp_path):
    # Timestamps say b before a, but with --arrivals step both arrive at step 0 in file order
    # (as the scheduler oracle adds them), so a is admitted first.
    p = write(tmp_path, [{"id": "a", "prompt_token_ids": [1] * 20, "output_length": 2,
                          "timestamp": 9},
                         {"id": "b", "prompt_token_ids": [2] * 20, "output_length": 2,
                          "timestamp": 1}])
    st = tmp_path / "st.jsonl"
    assert invoke(p, "--arrivals", "step", "--steps", st).exit_code == 0
    assert list(json.loads(st.read_text().splitlines()[0])["scheduled"]) == ["a", "b"]
    assert invoke(p, "--steps", st).exit_code == 0          # by timestamp: b arrives first
    assert list(json.loads(st.read_text().splitlines()[0])["scheduled"]) == ["b"]


def test_lora_ids_are_stable_across_processes(tmp_path):
    # BlockStored.lora_id must not depend on Python's per-process string hashing: adapters get
    # ids 1, 2, ... in order of first appearance in the trace file. Two processes with
    # different hash seeds write the same vLLM event stream.
    import os
    import subprocess
    import sys

    prompt = list(range(1, 40))
    p = write(tmp_path, [{"id": "a", "prompt_token_ids": prompt, "output_length": 1,
                          "lora": "sql"},
                         {"id": "b", "prompt_token_ids": prompt, "output_length": 1,
                          "lora": "chat"},
                         {"id": "c", "prompt_token_ids": prompt[::-1], "output_length": 1,
                          "lora": "sql"},
                         {"id": "d", "prompt_token_ids": prompt, "output_length": 1}])
    outs = []
    for seed in ("1", "2"):
        ev = tmp_path / f"ev{seed}.jsonl"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        code = "import sys; from kvcli.app import main; sys.argv[0] = 'kvcli'; main()"
        subprocess.run([sys.executable, "-c", code, "replay", str(p), "--mode", "cache",
                        "--events-format", "vllm", "--events", str(ev)],
                       check=True, env=env, capture_output=True, cwd=ROOT)
        outs.append(ev.read_bytes())
    assert outs[0] == outs[1]
    stored = [e for line in outs[0].splitlines() for e in json.loads(line)["events"]
              if e["type"] == "BlockStored"]
    assert [(e["lora_name"], e["lora_id"]) for e in stored] == [
        ("sql", 1), ("chat", 2), ("sql", 1), (None, None)]


def test_lengths_only_trace_says_its_hit_rate_is_zero_by_construction(tmp_path):
    # an Azure CSV (and a lengths trace) has no prompt content: every prompt is unique, so the
    # hit rate is 0 whatever the cache; the table and the JSON say so beside the 0
    az = tmp_path / "az.csv"
    az.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                  "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n")
    res = invoke(az, "--num-blocks", 100)
    assert res.exit_code == 0, res.output
    row = [ln for ln in res.stdout.splitlines() if "prompt content" in ln]
    assert len(row) == 1 and "lengths only (hit rate 0 by construction)" in row[0]
    d = json.loads(invoke(az, "--num-blocks", 100, "--json").stdout)
    assert (d["format"], d["prompt_content"], d["hit_rate"]) == ("azure", False, 0.0)
    lengths = write(tmp_path, [{"input_length": 40, "output_length": 2}] * 2)
    assert json.loads(invoke(lengths, "--json").stdout)["prompt_content"] is False
    # a trace with content: true, and no such row
    assert json.loads(invoke(SAMPLE, "--json").stdout)["prompt_content"] is True
    assert "prompt content" not in invoke(SAMPLE).stdout
