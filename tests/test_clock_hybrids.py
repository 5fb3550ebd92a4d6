"""The roofline clock counts the hybrids vLLM 0.33's perf.py misreads (docs/clock-mla.md):
Nemotron-H's one block a layer (Mamba2, attention or a squared-ReLU MLP), Falcon-H1's attention
and Mamba2 side by side, Qwen3-Next's Gated DeltaNet and gated attention. Each kernel group's
layers, FLOPs and bytes are worked out here from the configs' numbers; the all-reduces counted
per row-parallel output; `clock explain`'s vLLM column is perf.py's reading of them."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app
from kvcore.clock.batch import StepBatch
from kvcore.clock.work import allreduce_bytes, step_work, work_shape
from kvcore.models import read_hf_config

runner = CliRunner()
MAMBA = Path(__file__).resolve().parent / "data" / "mamba"
QWEN3_NEXT_DECODE = (142040104960, 52555952128)     # (FLOPs, bytes) in perf_hybrid's tp4 file


def _model(name: str):
    return read_hf_config(json.loads((MAMBA / f"{name}.config.json").read_text()), name=name)


def _work(name: str, tp: int, *requests: tuple[int, int]) -> dict:
    b = StepBatch()
    for t, c_after in requests:
        b.add(t, c_after, t > 1)
    return {c.name: c for c in step_work(work_shape(_model(name), tp=tp), b)}


def test_nemotron_h_one_block_a_layer() -> None:
    # "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-": 27 M, 4 *, 25 -
    D, di, T = 4480, 15680, 3
    w = _work("nemotron-nano-9b-v2", 1, (1, 4097), (1, 100), (1, 9))
    assert set(w) == {"qkv_proj", "attention", "o_proj", "mamba", "mlp", "lm_head"}
    assert (w["qkv_proj"].layers, w["mamba"].layers, w["mlp"].layers) == (4, 27, 25)
    # squared ReLU, no gate: up and down; activations: in, up's out, relu in/out, down in, out
    assert w["mlp"].flops == 2 * 2 * D * di * 25 * T
    assert w["mlp"].bytes == 2 * D * di * 2 * 25 + (2 * D + 4 * di) * 2 * 25 * T
    # 40 query heads, 8 KV heads of 128: 4 layers
    assert w["qkv_proj"].flops == 2 * D * (40 + 16) * 128 * 4 * T
    # the state read and written each step: conv (3, 10240 + 2*8*128) bf16, SSM (128, 80, 128)
    # in float32 (vLLM's NemotronHForCausalLMConfig)
    state = 3 * 12288 * 2 + 128 * 80 * 128 * 4
    params = (D * (2 * 10240 + 2 * 8 * 128 + 128) + 12288 * 4 + 12288 + 3 * 128 + 10240
              + 10240 * D)
    assert w["mamba"].flops == 2 * params * 27 * T
    assert w["mamba"].bytes == params * 2 * 27 + 2 * D * 2 * 27 * T + 2 * state * 27 * 3
    # one all-reduce a layer (56) and the embedding's
    assert allreduce_bytes(work_shape(_model("nemotron-nano-9b-v2"), tp=2), 10) == (57, 10 * D * 2)


def test_falcon_h1_attention_and_mamba2_side_by_side() -> None:
    D, di, T = 3072, 12288, 2048
    w = _work("falcon-h1-7b", 4, (2048, 2048))
    assert (w["qkv_proj"].layers, w["attention"].layers, w["mamba"].layers,
            w["mlp"].layers) == (44, 44, 44, 44)
    assert w["mlp"].flops == 2 * 3 * D * (di // 4) * 44 * T         # gated, split by tp
    # causal pairs of a 2,048 prefill, 12 query heads / 4 of 128, every layer full attention
    assert w["attention"].flops == 4 * 3 * 128 * 44 * (2048 * 2049 // 2)
    # attention, Mamba2 and MLP outputs each all-reduced: 3 a layer, plus the embedding's
    assert allreduce_bytes(work_shape(_model("falcon-h1-7b"), tp=4), T)[0] == 3 * 44 + 1


def test_qwen3_next_gated_deltanet_gated_attention_and_shared_expert() -> None:
    D, T = 2048, 5
    w = _work("qwen3-next-80b-a3b", 1, (4, 4), (1, 300))
    assert (w["qkv_proj"].layers, w["mamba"].layers, w["moe"].layers) == (12, 36, 48)
    # the output gate: a second query-sized output (16 heads of 256), 2 KV heads
    cols = (2 * 16 + 2 * 2) * 256
    assert w["qkv_proj"].flops == 2 * D * cols * 12 * T
    assert w["o_proj"].bytes == 16 * 256 * D * 2 * 12 + (16 * 256 + D + 3 * 16 * 256) * 2 * 12 * T
    # 10 routed experts of 512 and the shared expert (shared_expert_intermediate_size 512),
    # both gated, plus the router over 512 experts
    assert w["moe"].flops == (2 * 3 * D * (512 * 10 + 512) + 2 * D * 512) * 48 * T
    # Gated DeltaNet: key heads 16 x 128, value heads 32 x 128; conv over q, k, v (8,192 wide)
    qk, v = 16 * 128, 32 * 128
    params = (D * (2 * qk + 2 * v) + D * 2 * 32 + (2 * qk + v) * 4 + 2 * 32 + 128 + v * D)
    state = (3 * 8192 + 32 * 128 * 128) * 2
    assert w["mamba"].flops == 2 * params * 36 * T
    assert w["mamba"].bytes == params * 2 * 36 + 2 * D * 2 * 36 * T + 2 * state * 36 * 2
    assert allreduce_bytes(work_shape(_model("qwen3-next-80b-a3b"), tp=2), 1)[0] == 2 * 48 + 1


def _explain(name: str) -> dict:
    r = runner.invoke(app, ["clock", "explain", "--model-config", str(MAMBA / f"{name}.config.json"),
                            "--gpu", "h200", "--tp", "4", "--case", "d=64*1@4097", "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["cases"][0]


def test_explain_shows_perf_pys_reading_of_qwen3_next() -> None:
    """perf.py bills Qwen3-Next's 48 layers as attention plus MoE (no shared expert): the
    oracle's count of this case (tests/data/perf_hybrid, tp 4, the decode step)."""
    case = _explain("qwen3-next-80b-a3b")
    assert (case["vllm_flops"], case["vllm_read_bytes"] + case["vllm_write_bytes"]) == (
        QWEN3_NEXT_DECODE)
    assert any(d.startswith("Gated DeltaNet layers: the clock times") for d in case["differences"])


def test_explain_shows_perf_pys_reading_of_nemotron_h() -> None:
    """perf.py reads every Nemotron-H layer as attention plus MoE of NemotronHConfig's class
    defaults: the oracle's count of this case (tests/data/perf_hybrid, tp 4, the decode step)."""
    case = _explain("nemotron-nano-9b-v2")
    assert (case["vllm_flops"], case["vllm_read_bytes"] + case["vllm_write_bytes"]) == (
        748105236480, 43453915136)
    assert any(d.startswith("Nemotron-H: the clock counts each layer's one block")
               for d in case["differences"])


def test_replay_times_a_hybrid_on_the_roofline(tmp_path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(f'{{"timestamp": {i * 50}, "input_length": 1500, "output_length": 8, '
                             f'"hash_ids": [1, 2, {i + 3}]}}\n' for i in range(4)))
    r = runner.invoke(app, ["replay", str(trace), "--model", "qwen3-next-80b-a3b", "--gpu",
                            "h200", "--tp", "4", "--num-blocks", "400", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["clock"]["name"] == "roofline" and d["clock"]["model"] == "qwen3-next-80b-a3b"
    assert d["finished"] == 4 and d["latency"]["ttft_ms"]["count"] == 4


def test_a_verification_writes_the_state_after_each_of_its_tokens() -> None:
    """With K drafts a Gated DeltaNet layer reads a request's state once and writes it after
    each token it verifies (the K speculative state blocks), its conv state K rows longer."""
    D, k = 2048, 3
    b = StepBatch()
    b.add(1 + k, 300, False)                # a verification: 4 tokens after 296
    b.add(1 + k, 50, False)
    shape = work_shape(_model("qwen3-next-80b-a3b"), tp=1, spec_tokens=k)
    w = {c.name: c for c in step_work(shape, b)}
    qk, v = 16 * 128, 32 * 128
    params = (D * (2 * qk + 2 * v) + D * 2 * 32 + (2 * qk + v) * 4 + 2 * 32 + 128 + v * D)
    state = ((3 + k) * 8192 + 32 * 128 * 128) * 2
    # per layer and request: one read, 1 + K writes
    assert w["mamba"].bytes == (params * 2 * 36 + 2 * D * 2 * 36 * 2 * (1 + k)
                                + state * 36 * 2 * (1 + (1 + k)))
