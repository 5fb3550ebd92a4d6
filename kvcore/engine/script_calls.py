"""`kvcli script OPS --calls`: every op of an op script with its call tree through the layers
(`kvcore.call_tree`), and the free queue's ends before and after it."""

from __future__ import annotations

from typing import Any

from kvcore.call_tree import CallRecorder
from kvcore.engine.op_script import Op, ScriptConfig
from kvcore.engine.script_runner import ScriptRunner

ENDS = 3        # block ids shown at each end of the free queue


def free_queue_ends(pool: Any) -> dict:
    """The free queue's first and last `ENDS` block ids (the next to be popped first) and its
    length: where lazy eviction takes its blocks from, and where freed blocks go."""
    q = pool.free_block_queue
    head: list[int] = []
    tail: list[int] = []
    b = q.fake_free_list_head.next_free_block
    while b is not None and b is not q.fake_free_list_tail and len(head) < ENDS:
        head.append(b.block_id)
        b = b.next_free_block
    b = q.fake_free_list_tail.prev_free_block
    while b is not None and b is not q.fake_free_list_head and len(tail) < ENDS:
        tail.append(b.block_id)
        b = b.prev_free_block
    return {"head": head, "tail": tail[::-1], "free": q.num_free_blocks}


def run_ops_with_calls(cfg: ScriptConfig, ops: list[Op], path: str = "<ops>",
                       depth: int | None = None) -> list[dict]:
    """Each op's answer (the oracle's line) plus ``calls`` (its call trees, `CallNode.to_dict`)
    and ``free_queue`` (``before`` / ``after``), then the summary. The recorder's patches are
    in place only inside this call."""
    runner = ScriptRunner(cfg, path)
    rec = CallRecorder(depth)
    rec.watch(runner.mgr)
    out = []
    with rec:
        for op in ops:
            before = free_queue_ends(runner.mgr.block_pool)
            res = runner.apply(op)
            res["calls"] = [n.to_dict() for n in rec.take()]
            res["free_queue"] = {"before": before,
                                 "after": free_queue_ends(runner.mgr.block_pool)}
            out.append(res)
    out.append(runner.summary())
    return out
