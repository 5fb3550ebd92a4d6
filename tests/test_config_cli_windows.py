"""`kvcli config --gpu-memory-gib 80 --json` for the presets with sliding-window layers beside
full ones (Gemma 3's five to one, gpt-oss's alternating), checked by hand arithmetic as in
test_config_cli.py: the weights, the buffers, the groups, the blocks and the concurrency."""

from __future__ import annotations

from tests.test_config_cli import BUDGET, dense_layer, ok, rope


def test_gemma_3_27b_five_to_one() -> None:
    # tied embeddings; 4 norms a layer, q/k norms; SigLIP so400m + projector (test_gemma3_vision)
    params = 262208 * 5376 + 5376 + 62 * (dense_layer(5376, 32, 16, 128, 21504) + 2 * 5376
                                          + 2 * 128) + 423_060_336
    d = ok("gemma-3-27b", "--gpu-memory-gib", "80")
    assert d["layer_kinds"] == {"sliding": 52, "full": 10}
    page = 2 * 16 * 16 * 128 * 2
    # 52 sliding and 10 full: group size 10 (52 >= 1.5 x 10); 52 sliding -> 6 groups of 9,9,9,9,8,8
    assert [(g["kind"], g["num_layers"]) for g in d["groups"]] == [
        ("sliding_window", 9)] * 4 + [("sliding_window", 8)] * 2 + [("full", 10)]
    assert {g["page_size_bytes"] for g in d["groups"]} == {page}
    assert d["groups"][6]["layers"] == [f"layers.{i}" for i in range(5, 62, 6)]
    sliding = [i for i in range(62) if (i + 1) % 6]
    assert d["groups"][0]["layers"] == [f"layers.{i}" for i in sliding[0::6]]
    # two RoPE caches (the global layers' linear x 8: 1,048,576 rows; the local layers' own),
    # the embedding's normalizer, 62 layers' scales, SigLIP's position ids (64 x 64 patches)
    buffers = 131072 * 8 * 128 * 2 + rope(131072, layers=62) + 2 + 4096 * 8
    assert d["memory"]["buffers_bytes"] == buffers == 302_023_650
    available = BUDGET - params * 2 - buffers
    nb = available // (10 * page)
    assert d["num_blocks"] == nb
    # per request: sliding cdiv(min(1023 + 2 * 2048, 131072), 16) + 1 = 321 in each of 6
    # groups (2048: the default max_num_batched_tokens), full 131072 / 16 = 8192
    per_req = 6 * 321 + 8192
    assert [g["blocks_per_request"] for g in d["groups"]] == [321] * 6 + [8192]
    assert d["max_concurrency"] == nb / per_req
    assert d["max_model_len_fits"] == 131072


def test_gpt_oss_20b_alternating_with_sinks_holding_no_kv() -> None:
    h, heads, kv, hd = 2880, 64, 8, 64
    attn = h * (heads * hd + 2 * kv * hd) + heads * hd * h + (heads * hd + 2 * kv * hd + h) \
        + heads  # biases, and one sink per head: weights, not KV
    # (+ the router's and the experts' biases: gate/up 2 x 2880, down 2880 each)
    dense = 2 * 201088 * h + h + 24 * (attn + h * 32 + 2 * h + 32 + 32 * 3 * 2880)
    experts = 24 * 32 * 3 * h * 2880  # MXFP4: 4.25 bits each
    weights = dense * 2 + int(experts * 4.25 / 8)
    d = ok("gpt-oss-20b", "--gpu-memory-gib", "80")
    page = 2 * 16 * 8 * 64 * 2  # 32768: K and V only
    assert [(g["kind"], g["num_layers"], g["page_size_bytes"]) for g in d["groups"]] == [
        ("sliding_window", 12, page), ("full", 12, page)]
    assert d["groups"][0]["layers"] == [f"layers.{i}" for i in range(0, 24, 2)]
    # float32 YaRN: 4,096 x 32 rows x 64, and 24 layers' scales
    buffers = 4096 * 32 * 64 * 4 + 24 * 16
    assert d["memory"]["available_kv_cache_bytes"] == BUDGET - weights - buffers
    nb = (BUDGET - weights - buffers) // (12 * page)
    assert d["num_blocks"] == nb
    # sliding 128: cdiv(127 + 2 * 2048, 16) + 1 = 265; full 8192
    assert d["max_concurrency"] == nb / (265 + 8192)
