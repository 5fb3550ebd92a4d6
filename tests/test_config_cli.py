"""`kvcli config PRESET --gpu-memory-gib 80 --json` for every preset, checked by hand arithmetic.

For each preset the weights (parameter count x bytes), the page, the layers per group, the
bytes per block and num_blocks are written out here from the model's public config.json.
Available KV memory = int(80 * 2^30 * 0.92) - weights - buffers (0.92: vLLM 0.33's default
utilization; buffers: each attention layer's four float32 scales, 16 B, and the RoPE caches,
positions x rotary dim in the model dtype).
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kvcli.app import app

GiB = 1 << 30
BUDGET = int(80 * GiB * 0.92)
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["config", *args])


def ok(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def cdiv(a, b):
    return -(-a // b)


def dense_layer(h, heads, kv, hd, inter):
    """q, k, v, o projections + gated MLP + 2 norms (the Llama-family layer)."""
    return h * (heads * hd + 2 * kv * hd) + heads * hd * h + 3 * h * inter + 2 * h


def rope(positions, dim=128, layers=32):
    """A model's buffers: one RoPE cache of bfloat16, 16 B of scales an attention layer."""
    return positions * dim * 2 + 16 * layers


def check_uniform(d, *, layers, page, weights_bytes, buffers, max_len, kv_dtype="bfloat16"):
    assert d["kv_cache_dtype"] == kv_dtype
    assert [(g["kind"], g["num_layers"], g["page_size_bytes"]) for g in d["groups"]] == [
        ("full", layers, page)]
    assert d["memory"]["buffers_bytes"] == buffers
    assert d["memory"]["available_kv_cache_bytes"] == BUDGET - weights_bytes - buffers
    per_block = layers * page
    assert d["bytes_per_block"] == per_block
    nb = (BUDGET - weights_bytes - buffers) // per_block
    assert d["num_blocks"] == nb
    per_req = cdiv(max_len, 16)
    assert d["max_concurrency"] == nb / per_req
    assert d["kv_cache_tokens"] == int(nb / per_req * max_len)
    return nb


def test_llama_31_8b() -> None:
    params = 2 * 128256 * 4096 + 4096 + 32 * dense_layer(4096, 32, 8, 128, 14336)
    assert params == 8_030_261_248  # the published 8.03B
    d = ok("llama-3.1-8b", "--gpu-memory-gib", "80")
    nb = check_uniform(d, layers=32, page=2 * 16 * 8 * 128 * 2, weights_bytes=params * 2,
                       buffers=rope(131072), max_len=131072)
    assert nb == 30008                          # 30024 without the buffers' 32 MiB
    assert d["max_model_len_fits"] == 131072  # 30023 usable blocks >= 8192


def test_llama_31_70b_needs_tensor_parallelism() -> None:
    params = 2 * 128256 * 8192 + 8192 + 80 * dense_layer(8192, 64, 8, 128, 28672)
    r = run("llama-3.1-70b", "--gpu-memory-gib", "80", "--json")
    assert r.exit_code == 2
    short = (params * 2 + rope(131072, layers=80) - BUDGET) / GiB
    assert f"short by {short:.2f} GiB" in r.output and r.stdout == ""
    d = ok("llama-3.1-70b", "--gpu-memory-gib", "80", "--tp", "4")
    # 8 KV heads over 4 ranks: 2 a rank; a quarter of the weights, but the norms (whole)
    norms = 80 * 2 * 8192 + 8192
    weights = (params - norms) * 2 // 4 + norms * 2
    nb = check_uniform(d, layers=80, page=2 * 16 * 2 * 128 * 2, weights_bytes=weights,
                       buffers=rope(131072, layers=80), max_len=131072)
    assert nb == (BUDGET - weights - rope(131072, layers=80)) // (80 * 16384)


def test_qwen3_8b() -> None:
    params = 2 * 151936 * 4096 + 4096 + 36 * (dense_layer(4096, 32, 8, 128, 12288) + 2 * 128)
    d = ok("qwen3-8b", "--gpu-memory-gib", "80")
    check_uniform(d, layers=36, page=65536, weights_bytes=params * 2,
                  buffers=rope(40960, layers=36), max_len=40960)
    assert d["max_model_len"] == 40960


def test_mistral_7b_v03() -> None:
    params = 2 * 32768 * 4096 + 4096 + 32 * dense_layer(4096, 32, 8, 128, 14336)
    d = ok("mistral-7b-v0.3", "--gpu-memory-gib", "80")
    check_uniform(d, layers=32, page=65536, weights_bytes=params * 2, buffers=rope(32768),
                  max_len=32768)


def test_mixtral_8x7b() -> None:
    attn = 4096 * (4096 + 2 * 1024) + 4096 * 4096
    moe = 8 * 3 * 4096 * 14336 + 4096 * 8
    params = 2 * 32000 * 4096 + 4096 + 32 * (attn + moe + 2 * 4096)
    r = run("mixtral-8x7b", "--gpu-memory-gib", "80")
    assert r.exit_code == 2 and "weights 86.99 GiB" in r.output
    d = ok("mixtral-8x7b", "--gpu-memory-gib", "80", "--tp", "2")
    # the routers (4096 x 8 a layer) and the norms are whole on both ranks
    whole = 32 * 4096 * 8 + 32 * 2 * 4096 + 4096
    check_uniform(d, layers=32, page=2 * 16 * 4 * 128 * 2,
                  weights_bytes=(params - whole) * 2 // 2 + whole * 2, buffers=rope(32768),
                  max_len=32768)


def test_jamba_hybrid_mamba() -> None:
    h, di, ds, dc, dtr = 4096, 8192, 16, 4, 256
    attn = h * (4096 + 2 * 1024) + 4096 * h
    mamba = (h * 2 * di + di * dc + di + di * (dtr + 2 * ds) + dtr * di + di + di * ds + di
             + di * h)
    moe = 16 * 3 * h * 14336 + h * 16
    mlp = 3 * h * 14336
    params = (2 * 65536 * h + h + 4 * attn + 28 * (mamba + dtr + 2 * ds) + 32 * 2 * h
              + 16 * moe + 16 * mlp)
    r = run("jamba-v0.1", "--gpu-memory-gib", "80")
    assert r.exit_code == 2
    d = ok("jamba-v0.1", "--gpu-memory-gib", "80", "--tp", "2", "--max-model-len", "32768")
    # Per rank: Mamba-1 state conv (3, 4096) + SSM (4096, 16) in bf16 = 155648 bytes; the
    # attention page per token is 2 * 4 heads * 128 * 2 = 2048, so the block becomes
    # 16 * cdiv(155648, 16 * 2048) = 80 tokens, a page of 163840, and the state is padded to it.
    assert 3 * 4096 * 2 + 4096 * 16 * 2 == 155648
    assert [(g["kind"], g["block_size"], g["page_size_bytes"], g["num_layers"])
            for g in d["groups"]] == [("mamba", 80, 163840, 4)] * 7 + [("full", 80, 163840, 4)]
    assert d["groups"][7]["layers"] == ["layers.4", "layers.12", "layers.20", "layers.28"]
    assert d["groups"][0]["layers"] == ["layers.0", "layers.8", "layers.16", "layers.24"]
    # whole on both ranks: routers, norms; A float32
    whole = 16 * h * 16 + 32 * 2 * h + h + 28 * (dtr + 2 * ds)
    a = 28 * di * ds
    available = BUDGET - ((params - whole - a) * 2 // 2 + whole * 2 + a * 4 // 2)
    nb = available // (4 * 163840)
    assert d["num_blocks"] == nb
    # each Mamba group: 2 states (align mode); attention: cdiv(32768, 80) = 410
    assert d["max_concurrency"] == nb / (7 * 2 + 410)


def test_errors_exit_2_with_what_is_missing() -> None:
    r = run("no-such-model", "--gpu-memory-gib", "80")
    # MODEL is config's argument: "option --model" named a flag config does not have
    assert r.exit_code == 2 and r.stderr.startswith("error: argument MODEL: unknown model "
                                                    "'no-such-model'")
    assert run("--gpu-memory-gib", "80").stderr.startswith("error: argument MODEL: give exactly "
                                                           "one of a model preset")
    # the layers that cannot be one kind: the option to drop is named (it said MODEL)
    assert run("jamba-v0.1", "--num-blocks", "10000", "--disable-hybrid-kv-cache-manager"
               ).stderr == ("error: option --disable-hybrid-kv-cache-manager: Hybrid KV cache "
                            "manager is disabled but the layers could not be unified into one "
                            "type.\n")
    r = run("llama-3.1-8b", "--gpu-memory-gib", "24")
    # 24 GiB x 0.92 - 14.96 GiB weights - 32 MiB buffers = 7.09 GiB; one 131072-token request
    # needs 16 GiB
    assert r.exit_code == 2
    assert "needs 16.00 GiB" in r.output and "available 7.09 GiB" in r.output
    assert "the largest max_model_len that fits is" in r.output
    r = run("llama-3.1-8b")
    assert r.exit_code == 2 and "--gpu-memory-gib" in r.output
    # not one block beyond the null block fits: the block size is named, not max_model_len
    r = run("llama-3.1-8b", "--gpu-memory-gib", "80", "--block-size", "100000000000")
    assert r.exit_code == 2 and "option --block-size: " in r.output
    assert "available 0.00 GiB (0 blocks)" in r.output and "not even one token fits" in r.output
    assert "option --max-model-len" in run("llama-3.1-8b", "--gpu-memory-gib", "16.7").output
    # --num-blocks 1 is the null block alone: the count is named (it blamed --block-size)
    r = run("llama-3.1-8b", "--num-blocks", "1")
    assert r.exit_code == 2 and r.output.startswith("error: option --num-blocks: "), r.output


def test_kv_heads_and_tensor_parallel_must_divide_one_another(tmp_path) -> None:
    """vLLM's QKVParallelLinear splits the KV heads over the ranks, or replicates each over
    tp / heads of them, and asserts the division is exact; kvcli sized 8 // 3 = 2 a rank."""
    r = run("--layers", "4", "--kv-heads", "8", "--head-dim", "128", "--tp", "3",
            "--num-blocks", "1000", "--max-model-len", "4096")
    assert r.exit_code == 2 and r.stderr == (
        "error: option --tensor-parallel-size: --kv-heads' 8 KV heads and it must divide one "
        "another, as vLLM requires; got 3\n")
    cfg = {"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 12,
           "num_key_value_heads": 6, "hidden_size": 768, "max_position_embeddings": 4096}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    r = run("--model-config", str(p), "--tp", "4", "--num-blocks", "1000")
    assert r.exit_code == 2 and "6 KV heads and it must divide one another" in r.stderr
    # 6 heads at tp 2 (3 a rank) and at tp 12 (each on 2 ranks, 1 a rank) start
    for tp, heads in (("2", 3), ("12", 1)):
        d = ok("--model-config", str(p), "--tp", tp, "--num-blocks", "1000")
        assert d["groups"][0]["page_size_bytes"] == 2 * 16 * heads * 64 * 2


def test_model_config_file(tmp_path) -> None:
    cfg = {"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8,
           "num_key_value_heads": 2, "hidden_size": 512, "intermediate_size": 1024,
           "vocab_size": 1000, "max_position_embeddings": 4096, "torch_dtype": "float16"}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    d = ok("--model-config", str(p), "--num-blocks", "1000", "--block-size", "32")
    assert d["groups"][0]["page_size_bytes"] == 2 * 32 * 2 * 64 * 2
    assert d["num_blocks"] == 1000 and d["max_concurrency"] == 1000 / (4096 // 32)
    # 100 blocks hold 99 usable: 99 * 32 = 3168 tokens, short of one 4096-token request
    r = run("--model-config", str(p), "--num-blocks", "100", "--block-size", "32")
    assert r.exit_code == 2 and "the largest max_model_len that fits is 3168" in r.output
    assert "(128 blocks)" in r.output and "(99 blocks)" in r.output
    del cfg["num_attention_heads"]
    p.write_text(json.dumps(cfg))
    r = run("--model-config", str(p), "--num-blocks", "100")
    assert r.exit_code == 2 and "num_attention_heads" in r.output
    p.write_text("{not json")
    r = run("--model-config", str(p), "--num-blocks", "100")
    assert r.exit_code == 2 and "not valid JSON" in r.output
    r = run("--model-config", str(tmp_path / "missing.json"), "--num-blocks", "100")
    assert r.exit_code == 2 and "missing.json: no such file" in r.output


def test_explicit_geometry_and_dtypes() -> None:
    d = ok("--layers", "8", "--kv-heads", "4", "--head-dim", "64", "--dtype", "half",
           "--sliding-window", "256", "--sliding-layers", "3:1", "--num-blocks", "5000",
           "--kv-cache-dtype", "fp8", "--max-model-len", "8192")
    # layers 0,1,2 slide, 3 full, 4,5,6 slide, 7 full: 6 sliding + 2 full -> 4 groups of 2,
    # the sliding ones strided over [0,1,2,4,5,6]
    assert [(g["kind"], g["layers"]) for g in d["groups"]] == [
        ("sliding_window", ["layers.0", "layers.4"]), ("sliding_window", ["layers.1", "layers.5"]),
        ("sliding_window", ["layers.2", "layers.6"]), ("full", ["layers.3", "layers.7"])]
    assert d["groups"][0]["page_size_bytes"] == 2 * 16 * 4 * 64 * 1  # fp8: 1 byte
    # sliding: cdiv(min(255 + 2 * 2048, 8192), 16) + 1 = 273 in 3 groups; full 8192 / 16 = 512
    assert d["max_concurrency"] == 5000 / (3 * 273 + 512)
    r = run("--layers", "8", "--kv-heads", "4", "--head-dim", "64", "--dtype", "int3",
            "--num-blocks", "10")
    assert r.exit_code == 2 and "unknown dtype" in r.output


def test_list_presets() -> None:
    r = run("--list", "--json")
    assert r.exit_code == 0
    names = [p["name"] for p in json.loads(r.stdout)["presets"]]
    assert names == ["llama-3.1-8b", "llama-3.1-70b", "qwen3-8b", "mistral-7b-v0.3",
                     "mixtral-8x7b", "gemma-3-27b", "gpt-oss-20b", "jamba-v0.1",
                     "deepseek-v3", "deepseek-v2-lite", "qwen3-next-80b-a3b",
                     "nemotron-nano-9b-v2", "glm-4.5-air"]
    r = run("gemma-3-27b", "--gpu-memory-gib", "80")
    assert r.exit_code == 0 and "page, groups 0,1,2,3,4,5,6: 2 (K,V) x block 16" in r.stdout


def test_num_blocks_over_gpu_memory_keeps_the_memory_lines_true():
    # llama-3.1-8b: weights 8,030,261,248 params x 2 B, buffers 33,554,944 B, a block 32
    # layers x 65,536 B
    memory = BUDGET - 8_030_261_248 * 2 - 33_554_944
    per_block = 32 * 65_536
    # --num-blocks under what fits: the memory is the GPU's, not num_blocks x bytes per block
    # (which said 80 GiB x 0.9 - 14.96 GiB = 39.06 GiB)
    d = ok("llama-3.1-8b", "--gpu-memory-gib", "80", "--num-blocks", "20000")
    assert d["memory"]["available_kv_cache_bytes"] == memory == 62_933_320_806
    assert d["num_blocks"] == 20_000
    text = run("llama-3.1-8b", "--gpu-memory-gib", "80", "--num-blocks", "20000").stdout
    assert f"= {memory:,} bytes" in text
    assert f"num_blocks = 20,000 (--num-blocks; {memory // per_block:,} fit the memory)" in text
    # more than the memory holds: vLLM would fail allocating them; was printed as fitting 80 GiB
    r = run("llama-3.1-8b", "--gpu-memory-gib", "80", "--num-blocks", str(10**18))
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == ("error: option --num-blocks: 1,000,000,000,000,000,000 blocks need "
                        "1,953,125,000,000,000.00 GiB of KV cache, more than the 58.61 GiB left "
                        "of 80 GiB (vLLM would fail allocating them); at most 30,008 fit\n")
