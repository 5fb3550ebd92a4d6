"""`kvcli clock gpus`, `kvcli clock explain` and the replay's clock options on the command line:
exact numbers, JSON keys, one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_options import refused
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
SAMPLE = "traces/multiturn-chat.jsonl"
DATA = Path(__file__).parent / "data"


def test_clock_gpus_json_has_sources():
    r = runner.invoke(app, ["clock", "gpus", "--json"])
    assert r.exit_code == 0
    gpus = {g["name"]: g for g in json.loads(r.stdout)}
    assert gpus["h100-sxm"]["bf16_dense_tflops"] == 989.4
    assert gpus["a100-80gb"]["fp8_dense_tflops"] is None
    assert all(g["source"] for g in gpus.values())


def test_clock_explain_json():
    r = runner.invoke(app, ["clock", "explain", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                            "--case", "decode=64*1@4097", "--case", "prefill=2048", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    dec, pre = d["cases"]
    for case in (dec, pre):
        assert {"step_ms", "flops", "bytes", "vllm_flops", "vllm_read_bytes",
                "vllm_write_bytes", "components", "clock"} <= set(case)
    # vLLM's own counts of these two steps (tests/data/perf_cases/clock-worked-example)
    assert (dec["vllm_flops"], dec["vllm_read_bytes"], dec["vllm_write_bytes"]) == (
        1098068787200, 49621237760, 259686400)
    assert (pre["vllm_flops"], pre["vllm_read_bytes"], pre["vllm_write_bytes"]) == (
        30787376250880, 23062388736, 7784884736)
    assert dec["flops"] == dec["vllm_flops"]                 # decode: the same work
    assert pre["vllm_flops"] - pre["flops"] == 4 * 32 * 128 * 32 * (2048 * 2048 - 2048 * 2049 // 2)
    assert round(pre["step_ms"] - 0.15, 2) == 41.14
    assert [c["name"] for c in dec["components"]] == ["qkv_proj", "attention", "o_proj", "mlp",
                                                      "lm_head"]
    assert dec["clock"]["gpu"]["name"] == "h100-sxm"


def test_the_prefill_kv_read_difference_is_said_only_where_the_dtypes_differ():
    """The clock reads a prefill's context at the KV cache dtype, vLLM bills it at the
    activation dtype: with --kv-cache-dtype auto they are one dtype, and nothing differs."""
    said = ("prefill KV read: the clock reads the context at the KV cache dtype; vLLM bills it "
            "at the activation dtype")
    for dtype, noted in (("auto", False), ("fp8", True)):
        r = runner.invoke(app, ["clock", "explain", "--model", "llama-3.1-8b", "--gpu", "h100",
                                "--case", "mix=8192,32*1@8192", "--kv-cache-dtype", dtype,
                                "--json"])
        assert r.exit_code == 0, r.output
        assert (said in json.loads(r.stdout)["cases"][0]["differences"]) is noted


def test_clock_explain_table_and_quantised_note():
    r = runner.invoke(app, ["clock", "explain", "--model", "gpt-oss-20b", "--gpu", "h200",
                            "--case", "mix=2048,8*1@4096"])
    assert r.exit_code == 0, r.output
    assert "vLLM drops attention and FFN" in r.stdout and "gpt_oss_mxfp4" in r.stdout


@pytest.mark.parametrize("config, tp, said", [
    ("mamba_only/tiny-mamba2.config.json", 1, (
        "vLLM's perf.py builds no component for this model (its config has no "
        "num_attention_heads): its MFU counters stay 0; the clock times it")),
    ("sched_gemma/gemma3n_small.json", 1, (
        "vLLM's perf.py drops the FFN (intermediate_size is a list, which its integer field "
        "refuses); the clock times it")),
    ("gpt_family/dbrx-instruct.config.json", 8, (
        "vLLM's perf.py sees no experts in DBRX's ffn_config: it bills a dense FFN 24576 wide "
        "(4 x hidden); the clock times the experts")),
])
def test_what_vllm_leaves_out_of_a_models_count_is_said(config, tp, said):
    """perf.py builds no component for a Mamba model (and so counts 0), no FFN for Gemma 3n, no
    experts for DBRX (tests/data/perf_families): one line says so beside the clock's work."""
    r = runner.invoke(app, ["clock", "explain", "--model-config", str(DATA / config),
                            "--gpu", "h100", "--tp", str(tp), "--case", "d=4*1@100", "--json"])
    assert r.exit_code == 0, r.output
    case = json.loads(r.stdout)["cases"][0]
    assert said in case["differences"]
    if "mamba" in config:
        assert case["differences"] == [said]
        assert (case["vllm_flops"], case["vllm_read_bytes"], case["vllm_write_bytes"]) == (0, 0, 0)


def test_bad_case_and_gpu_are_one_line_exit_2():
    r = runner.invoke(app, ["clock", "explain", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                            "--case", "decode=64x1"])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "--case" in r.output
    r = runner.invoke(app, ["clock", "explain", "--model", "llama-3.1-8b", "--gpu", "tpu",
                            "--case", "prefill=8"])
    assert r.exit_code == 2 and "unknown GPU 'tpu'" in r.output and "--gpu" in r.output


def test_replay_refuses_a_model_bigger_than_the_gpu():
    r = runner.invoke(app, ["replay", SAMPLE, "--model", "llama-3.1-70b", "--gpu", "l4"])
    assert r.exit_code == 2
    assert r.output.count("\n") == 1 and "option --gpu" in r.output and "24 GB" in r.output


def test_replay_clock_options():
    r = runner.invoke(app, ["replay", SAMPLE, "--clock", "fixed:20", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["clock"] == {"name": "fixed", "step_ms": 20.0, "source": "given by the user"}
    # every batch 20 ms, back to back on the GPU (the sample never idles); under async the
    # first step returns early and takes no time, every other step ends as its batch does
    assert abs(d["sim_time_s"] - (d["steps"] - 1) * 0.020) < 1e-6
    r = runner.invoke(app, ["replay", SAMPLE, "--clock", "linear:1,2"])
    assert r.exit_code == 2 and "option --clock" in r.output
    r = runner.invoke(app, ["replay", SAMPLE, "--clock", "roofline"])
    assert r.exit_code == 2 and "needs a model" in r.output
    # linear given explicitly equals the default clock's run
    a = json.loads(runner.invoke(app, ["replay", SAMPLE, "--json"]).stdout)
    b = json.loads(runner.invoke(app, ["replay", SAMPLE, "--clock", "linear:5,0.05,0.25",
                                       "--json"]).stdout)
    assert a["sim_time_s"] == b["sim_time_s"] and "clock" not in a and "clock" not in a["config"]


def test_gpu_without_a_model_warns():
    # the GPU still gives vllm serve's batch defaults (kvcore.engine.serve_defaults)
    r = runner.invoke(app, ["replay", SAMPLE, "--gpu", "h100-sxm", "--json"])
    assert r.exit_code == 0
    assert ("option gpu sets only vllm serve's batch defaults on it (max_num_batched_tokens "
            "8,192, max_num_seqs 1,024) without a model") in r.stderr
    d = json.loads(r.stdout)
    assert d["clock"]["name"] == "linear" and d["config"]["gpu"] == "h100-sxm"
    assert (d["config"]["max_num_batched_tokens"], d["config"]["max_num_seqs"]) == (8192, 1024)
    r = runner.invoke(app, ["replay", SAMPLE, "--gpu", "h100-sxm", "--max-num-seqs", "64",
                            "--max-num-batched-tokens", "512", "--json"])
    assert r.exit_code == 0
    assert "option gpu has no effect without a model" in r.stderr


def test_stats_records_the_clock():
    r = runner.invoke(app, ["stats", SAMPLE, "--model", "llama-3.1-8b", "--gpu", "a100-80gb",
                            "--json"])
    assert r.exit_code == 0, r.output
    src = json.loads(r.stdout)["source"]
    assert src["clock"]["name"] == "roofline" and src["clock"]["gpu"]["name"] == "a100-80gb"
    assert src["summary_mismatches"] == {}
    plain = json.loads(runner.invoke(app, ["stats", SAMPLE, "--json"]).stdout)["source"]
    assert "clock" not in plain


def test_options_the_chosen_clock_does_not_read_are_said_and_a_gpu_name_is_checked(tmp_path):
    """The linear constants under another clock, and --gpu under linear or fixed, were accepted,
    echoed in `config` and read by nothing; a GPU name no clock read was never checked."""
    trace = tmp_path / "one.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 100, "output_length": 3}\n')
    base = ["replay", str(trace), "--json"]
    cases = [
        (["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--step-overhead-ms", "100",
          "--decode-ms-per-seq", "9"],
         "options decode_ms_per_seq, step_overhead_ms have no effect with the roofline clock"),
        (["--clock", "fixed:3", "--prefill-ms-per-token", "1"],
         "option prefill_ms_per_token has no effect with the fixed:3 clock"),
        (["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--clock", "fixed:3"],
         ("option gpu sets only vllm serve's batch defaults on it (max_num_batched_tokens "
          "8,192, max_num_seqs 1,024) with the fixed clock")),
        (["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--clock", "fixed:3",
          "--max-num-seqs", "64", "--max-num-batched-tokens", "512"],
         "option gpu has no effect with the fixed clock"),
        (["--tp", "2", "--kv-cache-dtype", "fp8"],
         "options kv_cache_dtype, tp have no effect without a model"),
    ]
    for args, words in cases:
        r = runner.invoke(app, base + args)
        assert r.exit_code == 0, r.output
        assert any(w.startswith(words) for w in json.loads(r.stdout)["warnings"]), args
    r = runner.invoke(app, base + ["--step-overhead-ms", "100"])     # the linear clock's own
    assert json.loads(r.stdout)["warnings"] == []
    for args in (["--model", "llama-3.1-8b", "--clock", "fixed:3"], []):
        r = runner.invoke(app, base + ["--gpu", "nonsense-gpu", *args])
        assert r.exit_code == 2 and r.stderr.startswith(
            "error: option --gpu: unknown GPU 'nonsense-gpu'"), r.output


@pytest.mark.parametrize(("args", "line"), [
    (["--model", "llama-3.1-8b", "--clock", "calibrated"],
     ("error: option --calibration: the calibrated clock needs a calibration file (kvcli "
     "calibrate --gpu)")),
    (["--model", "llama-3.1-8b", "--clock", "calibrated:1"],
     "error: option --clock: 'calibrated' takes no parameters (the file is --calibration)"),
    # (the option typed is named, and a missing file is said before what the clock needs)
    (["--calibration", "x.json"], "error: x.json: no such file"),
    (["--calibration", "tests/data/calibration/tiny-cpu.calibration.json"],
     ("error: option --calibration: tests/data/calibration/tiny-cpu.calibration.json: the "
      "calibrated clock needs the model it was measured for (--model or --model-config)")),
])
def test_calibrated_clock_usage_errors(args: list[str], line: str) -> None:
    r = runner.invoke(app, ["replay", "traces/shared-prefix.jsonl", *args])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [line]


# -- clock explain: a case of 10^8 requests listed them one by one and never returned ------------

@pytest.mark.parametrize("case, said", [
    ("decode=99999999*1@4097", "more than 1,000,000 requests in one step"),
    ("decode=600000*1,600000*1@5", "more than 1,000,000 requests in one step"),
    ("prefill=99999999999", ("K 99,999,999,999 is more than the limit of 10,000,000 tokens a "
                            "request")),
    ("=5", "no NAME before '=' (give NAME=... or the requests alone)"),   # (shown unnamed)
])
def test_clock_case_is_bounded(case, said):
    refused(["clock", "explain", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--case", case],
            f"error: option --case: case {case!r}: {said}")
