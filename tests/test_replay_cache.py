"""Cache mode = the cache-mode oracle (vLLM 0.33.0's KVCacheManager, one request at a time).

Expected numbers were answered by the oracle's `cache_mode` (capacity C usable blocks =
`--num-blocks C+1`; how each was recorded: tests/data/README.md); the generated traces in
tests/data/cache_mode/ were made with `kvcli gen` (see the README there).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kvcore.engine.replay import ReplayOptions, replay
from kvcore.engine.vllm_events import VllmEvents

HERE = Path(__file__).resolve().parent
TRACES = HERE / "data" / "traces"              # see data/README.md
DATA = HERE / "data" / "cache_mode"
MOONCAKE = TRACES / "mooncake" / "conversation_trace.jsonl.gz"


def cache(path, **kw):
    return replay(str(path), ReplayOptions(mode="cache", **kw))


@pytest.mark.slow
@pytest.mark.parametrize("num_blocks, hit_tokens, hit_rate", [
    (None, 54_063_104, 0.37338),    # room for every block
    (1954, 8_089_088, 0.05587),     # 1,953 usable blocks (block 0 is the null block)
    (7813, 26_779_136, 0.18495),    # 7,812 usable blocks
])
def test_mooncake_conversation_matches_vllm(num_blocks, hit_tokens, hit_rate):
    s = cache(MOONCAKE, block_size=512, num_blocks=num_blocks)
    assert round(s.hit_rate, 5) == hit_rate
    assert s.hit_tokens == hit_tokens
    assert s.requests == 12031 and s.rejected == 0
    assert s.prompt_tokens == 144_793_823          # every input_length counted once


@pytest.mark.parametrize("trace, kw, hit_tokens, prompt_tokens, rejected", [
    # oracle cache_mode multiturn-bs64.jsonl --block-size 16 --capacities inf,300,1000
    ("multiturn-bs64.jsonl", {"block_size": 16}, 98944, 135915, 0),
    ("multiturn-bs64.jsonl", {"block_size": 16, "num_blocks": 301}, 69920, 135915, 0),
    ("multiturn-bs64.jsonl", {"block_size": 16, "num_blocks": 1001}, 93312, 135915, 0),
    # --block-size 64 --capacities inf,100
    ("multiturn-bs64.jsonl", {"block_size": 64}, 98944, 135915, 0),
    ("multiturn-bs64.jsonl", {"block_size": 64, "num_blocks": 101}, 74560, 135915, 0),
    # --block-size 64 --capacities 30,45 --warmup 0.25: small pools reject long prompts
    ("multiturn-bs64.jsonl", {"block_size": 64, "num_blocks": 31, "warmup": 0.25}, 36096, 83379,
     14),
    ("multiturn-bs64.jsonl", {"block_size": 64, "num_blocks": 46, "warmup": 0.25}, 47552, 114130,
     0),
    # shared-prefix-bs32.jsonl --block-size 16 --capacities inf,200 --warmup 0.5
    ("shared-prefix-bs32.jsonl", {"block_size": 16, "warmup": 0.5}, 20160, 23700, 0),
    ("shared-prefix-bs32.jsonl", {"block_size": 16, "num_blocks": 201, "warmup": 0.5}, 12016,
     23700, 0),
    # campaign of 2026-12-03 (cache_mode/README.md): --block-size 16 --capacities 96,1904
    # (96 blocks: the 63 prompts longer than that rejected), --block-size 4 --capacities 7582
    # --warmup 0.25, --block-size 64 --capacities 24
    ("multiturn-7701-bs64.jsonl", {"block_size": 16, "num_blocks": 97}, 57616, 111591, 63),
    ("multiturn-7701-bs64.jsonl", {"block_size": 16, "num_blocks": 1905}, 179776, 242415, 0),
    ("multiturn-7701-bs64.jsonl", {"block_size": 4, "num_blocks": 7583, "warmup": 0.25}, 150656,
     200257, 0),
    ("multiturn-7701-bs64.jsonl", {"block_size": 64, "num_blocks": 25}, 57600, 111591, 63),
    # a file whose lines are not in timestamp order: kvcli takes them in arrival order, so these
    # are the oracle's answers to the same lines sorted by timestamp (ties in file order); the
    # oracle reads a file in file order, and on this file as written answers 388 / 918 and
    # 352 / 1018 (cache_mode/README.md)
    ("shuffled-7317.jsonl", {"block_size": 4, "num_blocks": 26, "warmup": 0.25}, 456, 1007, 7),
    ("shuffled-7317.jsonl", {"block_size": 16, "num_blocks": 7}, 384, 1018, 8),
    ("shuffled-7317.jsonl", {"block_size": 16, "num_blocks": 19}, 1200, 2169, 0),
])
def test_generated_traces_match_vllm(trace, kw, hit_tokens, prompt_tokens, rejected):
    s = cache(DATA / trace, **kw)
    assert (s.hit_tokens, s.prompt_tokens, s.rejected) == (hit_tokens, prompt_tokens, rejected)


@pytest.mark.parametrize("name, analytic", [("sglang_gsp_default_bs16.jsonl", 0.88235),
                                            ("vllm_prefix_repetition_default_bs16.jsonl", 0.495)])
def test_generated_shared_prefix_traces_reach_analytic_rates(name, analytic):
    # The analytic numbers ignore vLLM's last-token rule (a prompt never hits its last token).
    # It costs nothing here: every shared prefix is followed by unique tokens (a 128-token
    # question, a 256-token suffix), so the capped lookup never reaches into the prefix.
    s = cache(TRACES / "generated" / name)
    assert round(s.hit_rate, 5) == analytic


def test_last_token_rule_costs_a_block_on_a_repeated_prompt(tmp_path):
    # The same 64-token prompt twice at block size 16: the second hits 3 blocks, not 4.
    p = tmp_path / "t.jsonl"
    rec = {"timestamp": 0, "input_length": 64, "output_length": 1, "block_size": 16,
           "hash_ids": [1, 2, 3, 4]}
    p.write_text(json.dumps(rec) + "\n" + json.dumps(rec) + "\n")
    s = cache(p, block_size=16)
    assert s.hit_tokens == 48 and s.prompt_tokens == 128


def test_cache_mode_vllm_events_one_batch_per_request(tmp_path):
    buf = io.BytesIO()
    replay(str(DATA / "shared-prefix-bs32.jsonl"), ReplayOptions(mode="cache", block_size=16),
           VllmEvents(buf))
    batches = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert len(batches) == 60            # each request stores its blocks; nothing is evicted
    assert all(e["type"] == "BlockStored" for b in batches for e in b["events"])
    # Every prompt is 790 tokens = 49 full blocks of 16, stored once per distinct content.
    stored = [h for b in batches for e in b["events"] for h in e["block_hashes"]]
    assert len(stored) == len(set(stored))
