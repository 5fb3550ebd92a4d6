"""A small generator of Mooncake-format traces for the curve and policy tests, and its checks.

The traces have what makes a prefix cache interesting and what breaks naive curve shortcuts:
shared system prompts, multi-turn conversations that extend an earlier prompt, exact repeats
(block-aligned ones make vLLM cache a second block for a key that is still cached), partial
last blocks, and a few prompts much larger than the rest (rejected by small pools).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "traces"
# The Mooncake conversation trace, gzipped (trace readers take `.gz`); used by other modules too.
CONVERSATION = DATA / "mooncake" / "conversation_trace.jsonl.gz"


def make_trace(path: Path, *, seed: int, n: int = 300, tb: int = 16, aligned_repeats: bool = True,
               big: bool = True) -> Path:
    """Write a trace of `n` requests with trace block size `tb`; return its path."""
    rng = random.Random(seed)
    next_id = 0

    def fresh(k: int) -> list[int]:
        nonlocal next_id
        out = list(range(next_id, next_id + k))
        next_id += k
        return out

    systems = [fresh(rng.randint(1, 6)) for _ in range(4)]
    convs: list[tuple[list[int], int]] = []       # (ids, input_length) of earlier prompts
    lines = []
    for i in range(n):
        roll = rng.random()
        if convs and roll < 0.15:
            ids, length = rng.choice(convs)                 # an exact repeat
            if not aligned_repeats and length % tb == 0:
                length -= rng.randrange(1, tb, 2)
                ids = ids[:-(-length // tb)]
                ids = ids[:-1] + fresh(1)                   # its partial block is new content
        else:
            if convs and roll < 0.6:
                base, blen = rng.choice(convs)              # the next turn of a conversation
                # Only full blocks of the earlier prompt are shared content.
                ids = base[:blen // tb]
            else:
                ids = list(rng.choice(systems))
            ids = ids + fresh(rng.randint(1, 40 if big and rng.random() < 0.05 else 8))
            # Without aligned repeats the lengths are odd: aligned to no engine block size.
            length = len(ids) * tb - (0 if aligned_repeats and rng.random() < 0.3
                                      else rng.randrange(1, tb, 2))
        convs.append((ids, length))
        lines.append({"timestamp": i, "input_length": length, "output_length": 4,
                      "hash_ids": ids, "block_size": tb})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_generated_trace_is_well_formed(tmp_path):
    from kvcore.traces import read_trace

    p = make_trace(tmp_path / "t.jsonl", seed=1)
    trace = read_trace(str(p))
    assert len(trace.requests) == 300
    for r in trace.requests:
        assert len(r.hash_ids) == -(-r.prompt_len // 16)
    # Every id always follows the same predecessor (prefix-chained, as in Mooncake traces).
    parent: dict[int, int] = {}
    for r in trace.requests:
        for i, h in enumerate(r.hash_ids):
            assert parent.setdefault(h, r.hash_ids[i - 1] if i else -1) == \
                (r.hash_ids[i - 1] if i else -1)
