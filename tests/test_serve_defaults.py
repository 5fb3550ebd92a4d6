"""`vllm serve`'s batch defaults follow its GPU (vLLM 0.33 `EngineArgs.get_batch_defaults`):
a run that names its GPU starts from that GPU's budget and `max_num_seqs`, then vLLM's rules;
one that sizes from a GPU's memory without naming it is told it runs SchedulerConfig's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.clock.gpus import find_gpu
from kvcore.engine.serve_defaults import batch_defaults

runner = CliRunner()
SAMPLE = str(Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl")

# `kvcore.engine.serve_defaults.unnamed_note`, both values left to kvcli
UNNAMED_NOTE = ("max_num_batched_tokens and max_num_seqs start from vLLM's SchedulerConfig "
                "defaults (2,048 and 128) with no GPU named; vllm serve starts from its GPU's: "
                "8,192 and 1,024 on an H100 or H200, 16,384 and 1,024 on a B200 or MI300X, "
                "2,048 and 256 on an A100, L40S, L4 or GB10 (option gpu names it)")


@pytest.mark.parametrize(("gpu", "want"), [
    # >= 160 GiB: the largest row; >= 70 GiB and not an A100: H100's; else the small row
    ("b200", (16384, 1024)), ("mi300x", (16384, 1024)),
    ("h100-sxm", (8192, 1024)), ("h100-pcie", (8192, 1024)), ("h100-nvl", (8192, 1024)),
    ("h200", (8192, 1024)),
    ("a100-80gb", (2048, 256)), ("l40s", (2048, 256)), ("l4", (2048, 256)),
])
def test_each_preset_gets_its_rows_defaults(gpu, want):
    assert batch_defaults(find_gpu(gpu)) == want


def test_the_rows_in_words_are_the_rule():
    """`ROWS` (help texts, warnings) names each preset on the row `batch_defaults` gives it."""
    from kvcore.clock.gpus import GPUS
    from kvcore.engine.serve_defaults import ROWS

    for gpu in GPUS.values():
        words = next(row[0] for row in ROWS if (row[1], row[2]) == batch_defaults(gpu))
        assert gpu.name.split("-")[0].upper() in words.upper(), gpu.name


def test_a_device_as_cuda_describes_it():
    """`kvcli bench --gpu --trace` replays with the defaults of the GPU it times, from CUDA's
    total memory and name (an H100 reports 79.1 GiB; an A100 80GB stays on the small row)."""
    from kvcore.engine.serve_defaults import device_batch_defaults

    assert device_batch_defaults(85_045_231_616, "NVIDIA H100 80GB HBM3") == (8192, 1024)
    assert device_batch_defaults(150_754_820_096, "NVIDIA H200") == (8192, 1024)
    assert device_batch_defaults(85_899_345_920, "NVIDIA A100-SXM4-80GB") == (2048, 256)
    assert device_batch_defaults(191_000_000_000, "NVIDIA B200") == (16384, 1024)
    assert device_batch_defaults(47_000_000_000, "NVIDIA L40S") == (2048, 256)
    # a GB10 (compute capability 12.1) has the memory, not the compute: the small row
    assert device_batch_defaults(128 * 2**30, "NVIDIA GB10", (12, 1)) == (2048, 256)
    assert device_batch_defaults(128 * 2**30, "NVIDIA GB10", (12, 0)) == (8192, 1024)


def _config(*args: str) -> tuple[dict, list[str]]:
    r = runner.invoke(app, ["replay", SAMPLE, "--num-blocks", "512", *args, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    c = doc["config"]
    return {"budget": c["max_num_batched_tokens"], "seqs": c["max_num_seqs"]}, doc["warnings"]


def test_a_named_gpu_gives_the_defaults_then_vllms_rules():
    assert _config()[0] == {"budget": 2048, "seqs": 128}            # SchedulerConfig's
    assert _config("--gpu", "h200")[0] == {"budget": 8192, "seqs": 1024}
    assert _config("--gpu", "a100")[0] == {"budget": 2048, "seqs": 256}
    # a value given stays; the other starts from the GPU's row, then the rules: max_num_seqs
    # at most the budget, the budget at most max_num_seqs x max_model_len
    assert _config("--gpu", "h100", "--max-num-batched-tokens", "512")[0] == {
        "budget": 512, "seqs": 512}
    assert _config("--gpu", "h100", "--max-num-seqs", "4", "--max-model-len", "1200")[0] == {
        "budget": 4800, "seqs": 4}
    # chunked prefill off: the budget at least max_model_len, over the GPU's row
    assert _config("--gpu", "a100", "--no-enable-chunked-prefill", "--max-model-len", "4096")[
        0] == {"budget": 4096, "seqs": 256}
    # cache mode has no scheduler: nothing moves
    r = runner.invoke(app, ["replay", SAMPLE, "--mode", "cache", "--gpu", "h100", "--json"])
    assert json.loads(r.stdout)["config"]["max_num_seqs"] == 128


def test_the_gpu_a_calibration_file_was_measured_on_is_named(tmp_path):
    from kvcore.clock.calibration_fit import fit_tables
    from kvcore.models import load_preset
    from tests.calibration_synth import document, tables

    factors, fit = fit_tables(load_preset("llama-3.1-8b"), tables(),
                              {"copy_tbps": 3.1, "gemm_bf16_tflops": 700.0})
    cal = tmp_path / "cal.json"
    doc = document(factors, fit)
    cal.write_text(json.dumps(doc))      # an H100 80GB HBM3
    got, _ = _config("--model", "llama-3.1-8b", "--calibration", str(cal))
    assert got == {"budget": 8192, "seqs": 1024}
    # a file measured on a CPU (`kvcli calibrate --device cpu`) names no GPU
    doc["gpu"]["name"] = "cpu (Triton interpreter)"
    cal.write_text(json.dumps(doc))
    got, _ = _config("--model", "llama-3.1-8b", "--calibration", str(cal))
    assert got == {"budget": 2048, "seqs": 128}


def test_a_value_on_the_config_line_stays(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"config": {"max_num_seqs": 16}}\n' + Path(SAMPLE).read_text())
    r = runner.invoke(app, ["replay", str(trace), "--gpu", "h100", "--num-blocks", "512",
                            "--json"])
    assert r.exit_code == 0, r.output
    c = json.loads(r.stdout)["config"]
    assert (c["max_num_batched_tokens"], c["max_num_seqs"]) == (8192, 16)


def test_a_pool_sized_from_memory_with_no_gpu_named_is_said():
    model = ("--model", "llama-3.1-8b", "--gpu-memory-gib", "79", "--max-model-len", "8192")
    r = runner.invoke(app, ["replay", SAMPLE, *model, "--json"])
    assert r.exit_code == 0, r.output
    assert UNNAMED_NOTE in json.loads(r.stdout)["warnings"]
    for named in (["--gpu", "h100"], ["--max-num-seqs", "128", "--max-num-batched-tokens", "2048"],
                  ["--num-blocks", "4096"]):        # (num_blocks: not sized from the memory)
        r = runner.invoke(app, ["replay", SAMPLE, *model, *named, "--json"])
        assert r.exit_code == 0, r.output
        assert not [w for w in json.loads(r.stdout)["warnings"] if "SchedulerConfig" in w], named
    # one value given: the note names only the other
    r = runner.invoke(app, ["replay", SAMPLE, *model, "--max-num-seqs", "64", "--json"])
    assert ("max_num_batched_tokens starts from vLLM's SchedulerConfig default (2,048) with no "
            "GPU named; vllm serve starts from its GPU's: 8,192 on an H100 or H200, 16,384 on a "
            "B200 or MI300X, 2,048 on an A100, L40S, L4 or GB10 (option gpu names it)"
            ) in json.loads(r.stdout)["warnings"]
    # kvcli config names no GPU: its scheduler line says where the values come from
    r = runner.invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "79"])
    assert r.exit_code == 0, r.output
    assert ("scheduler: max_num_seqs 128, max_num_batched_tokens 2,048, chunked prefill on (from "
            "SchedulerConfig's defaults; vllm serve's follow its GPU") in r.stdout


def test_throughput_mode_doubles_the_defaults_not_a_value_given():
    """vLLM's `--performance-mode throughput` doubles the batch defaults it picked (after the
    GPU's row, before the rules), never a value the user set; interactivity sizes CUDA graphs
    only (said to change nothing here)."""
    tp = ("--performance-mode", "throughput")
    assert _config(*tp)[0] == {"budget": 4096, "seqs": 256}
    assert _config(*tp, "--gpu", "h200")[0] == {"budget": 16384, "seqs": 2048}
    assert _config(*tp, "--gpu", "h200", "--max-num-seqs", "100")[0] == {
        "budget": 16384, "seqs": 100}
    # then the rules: max_num_seqs at most the budget given
    assert _config(*tp, "--max-num-batched-tokens", "200")[0] == {"budget": 200, "seqs": 200}
    got, said = _config("--performance-mode", "interactivity")
    said = [w for w in said if "performance_mode" in w]
    assert got == {"budget": 2048, "seqs": 128} and said == [
        ("option performance_mode interactivity: no effect here: it changes only vLLM's CUDA "
         "graphs, which kvcli does not model")]
    assert not [w for w in _config("--performance-mode", "balanced")[1]
                if "performance_mode" in w]                       # (the default restated)
    _, said = _config(*tp, "--max-num-seqs", "8", "--max-num-batched-tokens", "64")
    assert [w for w in said if "performance_mode" in w] == [
        ("option performance_mode throughput: no effect here: throughput doubles only the "
         "batch defaults, and max_num_batched_tokens and max_num_seqs are given")]


def test_config_names_the_gpu_for_its_batch_defaults():
    """`kvcli config --gpu G` sizes as `kvcli replay --gpu G` does: Gemma 3's sliding groups
    reserve blocks for 2 x the budget in flight, so an H100's 8,192 (vllm serve's) holds more
    blocks a request than SchedulerConfig's 2,048 (the concurrency vLLM reports falls)."""
    def sized(*args: str) -> dict:
        r = runner.invoke(app, ["config", "gemma-3-27b", "--gpu-memory-gib", "79",
                                "--max-model-len", "32768", *args, "--json"])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    plain, h100 = sized(), sized("--gpu", "h100")
    assert (plain["max_num_batched_tokens"], plain["max_num_seqs"]) == (2048, 128)
    assert (h100["max_num_batched_tokens"], h100["max_num_seqs"]) == (8192, 1024)
    assert [g["blocks_per_request"] for g in plain["groups"]][:1] == [321]
    assert [g["blocks_per_request"] for g in h100["groups"]][:1] == [1089]
    assert (round(plain["max_concurrency"], 2), round(h100["max_concurrency"], 2)) == (4.39, 2.03)
    doubled = sized("--gpu", "h100", "--performance-mode", "throughput")
    assert (doubled["max_num_batched_tokens"], doubled["max_num_seqs"]) == (16384, 2048)
    # the same as the replay's pool (its start-up applies the same rules)
    r = runner.invoke(app, ["replay", SAMPLE, "--model", "gemma-3-27b", "--gpu-memory-gib", "79",
                            "--gpu", "h100", "--max-model-len", "32768", "--json"])
    c = sized("--gpu", "h100")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["num_blocks"] == c["num_blocks"]
