"""`kvcli script --calls`: the call tree of each op through KVCacheManager -> coordinator ->
managers -> BlockPool -> free queue (`kvcore.call_tree`), exactly, for the four paths a learner
follows in vLLM's source: prefill allocation, decode append (room in the last block, a new
block, no block left), a prefix hit (touch), the free (and the lazy eviction that reuses a freed
block), with one full-attention group and with full + sliding window."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.call_tree import CallRecorder
from kvcore.engine.op_script import load_script
from kvcore.engine.script_calls import run_ops_with_calls

# They patch the stack's classes (or record their calls): the pure-Python modules only.
pytestmark = pytest.mark.pure_python

U, H = "UnitaryKVCacheCoordinator", "HybridKVCacheCoordinator"
F, S = "FullAttentionManager", "SlidingWindowManager"
FULL = [{"config": {"groups": [{"type": "full"}], "block_size": 4, "num_blocks": 6}},
        {"op": "new", "id": "a", "prompt": list(range(1, 11))},
        {"op": "decode", "id": "a", "token": 99},
        {"op": "decode", "id": "a", "token": 98},
        {"op": "free", "id": "a"},
        {"op": "new", "id": "b", "prompt": list(range(1, 11))},
        {"op": "new", "id": "c", "prompt": list(range(50, 58))},
        {"op": "decode", "id": "b", "token": 7},
        {"op": "decode", "id": "b", "token": 8},
        {"op": "decode", "id": "b", "token": 9}]


def run(tmp_path, ops: list[dict], depth: int | None = None) -> list[dict]:
    path = tmp_path / "ops.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in ops))
    cfg, op_list = load_script(str(path))
    return run_ops_with_calls(cfg, op_list, str(path), depth)[:-1]


def tree(node: dict) -> tuple:
    """(call, returns, children): the shape a test states exactly."""
    return (node["call"], node["returns"], [tree(c) for c in node["children"]])


# vLLM's get_new_blocks asks `_maybe_evict_cached_block` of every popped block (caching on);
# one that holds no hash answers False
NO_HASH = [("BlockPool._maybe_evict_cached_block", False, [])]
# vLLM's allocate_slots calls remove_skipped_blocks on every manager, before its fit check
SKIP = (f"{U}.remove_skipped_blocks", None, [(f"{F}.remove_skipped_blocks", None, [])])


def lookup(coord: str, hit: dict, managers: list[str]) -> tuple:
    return ("KVCacheManager.get_computed_blocks", hit,
            [(f"{coord}.find_longest_cache_hit", hit,
              [(f"{m}.find_longest_cache_hit", {"blocks": [b], "hit_tokens": hit["hit_tokens"]},
                []) for m, b in zip(managers, hit["blocks"])])])


def test_the_four_paths_with_one_full_attention_group(tmp_path):
    ops = run(tmp_path, FULL)
    new_a, dec1, dec2, free_a, new_b, new_c, dec_b1, dec_b2, dec_b3 = ops
    miss = {"blocks": [[]], "hit_tokens": 0}
    # prefill: 10 tokens, 3 blocks popped from the queue's head, the 2 full ones cached
    assert [tree(n) for n in new_a["calls"]] == [
        lookup(U, miss, [F]),
        ("KVCacheManager.allocate_slots", [[1, 2, 3]], [
            (f"{U}.get_num_blocks_to_allocate", 3, [(f"{F}.get_num_blocks_to_allocate", 3, [])]),
            SKIP,
            (f"{U}.get_num_blocks_to_allocate", 3, [(f"{F}.get_num_blocks_to_allocate", 3, [])]),
            (f"{U}.allocate_new_blocks", [[1, 2, 3]], [(f"{F}.allocate_new_blocks", [1, 2, 3], [
                ("BlockPool.get_new_blocks", [1, 2, 3],
                 [("FreeKVCacheBlockQueue.popleft_n", [1, 2, 3], []),
                  *NO_HASH * 3])])]),
            (f"{U}.cache_blocks", None, [(f"{F}.cache_blocks", None,
                                          [("BlockPool.cache_full_blocks", None, [])])])])]
    assert new_a["calls"][1]["args"] == {"request": "a", "num_new_tokens": 10,
                                         "num_new_computed_tokens": 0,
                                         "new_computed_blocks": [[]],
                                         "full_sequence_must_fit": True}
    cache = new_a["calls"][1]["children"][4]["children"][0]["children"][0]["args"]
    assert (cache["blocks"], cache["num_cached_blocks"], cache["num_full_blocks"]) == \
        ([1, 2, 3], 0, 2)
    assert new_a["free_queue"] == {"before": {"head": [1, 2, 3], "tail": [3, 4, 5], "free": 5},
                                   "after": {"head": [4, 5], "tail": [4, 5], "free": 2}}
    # decode with room in the last block: nothing reaches the pool; the next one fills block 3
    room = ("KVCacheManager.allocate_slots", [[]], [
        SKIP,
        (f"{U}.get_num_blocks_to_allocate", 0, [(f"{F}.get_num_blocks_to_allocate", 0, [])]),
        (f"{U}.allocate_new_blocks", [[]], [(f"{F}.allocate_new_blocks", [], [])]),
        (f"{U}.cache_blocks", None, [(f"{F}.cache_blocks", None, [])])])
    assert [tree(n) for n in dec1["calls"]] == [room]
    assert tree(dec2["calls"][0])[2][3] == (f"{U}.cache_blocks", None, [
        (f"{F}.cache_blocks", None, [("BlockPool.cache_full_blocks", None, [])])])
    # the free: tail first, all three hashed (block 3 filled by the two decodes), so all to
    # the queue's tail (append_n; prepend_n, for unhashed blocks, gets none), hashes kept
    assert [tree(n) for n in free_a["calls"]] == [("KVCacheManager.free", None, [
        (f"{U}.free", None, [(f"{F}.free", None, [("BlockPool.free_blocks", None, [
            ("FreeKVCacheBlockQueue.prepend_n", None, []),
            ("FreeKVCacheBlockQueue.append_n", None, [])])])])])]
    free_blocks = free_a["calls"][0]["children"][0]["children"][0]["children"][0]
    assert free_blocks["args"] == {"ordered_blocks": [3, 2, 1]}
    assert [c["args"] for c in free_blocks["children"]] == [{"blocks": []},
                                                             {"blocks": [3, 2, 1]}]
    assert free_a["free_queue"]["after"] == {"head": [4, 5, 3], "tail": [3, 2, 1], "free": 5}
    # a prefix hit: 2 cached blocks taken back out of the free queue (touch), 1 new one
    hit = {"blocks": [[1, 2]], "hit_tokens": 8}
    assert tree(new_b["calls"][0]) == lookup(U, hit, [F])
    assert tree(new_b["calls"][1])[2][3] == (f"{U}.allocate_new_computed_blocks", None, [
        (f"{F}.add_local_computed_blocks", None, [
            ("BlockPool.touch", None, [("FreeKVCacheBlockQueue.remove_n", None, [])])])])
    # lazy eviction: c's second block is 3, still holding a's third block's hash
    pop = tree(new_c["calls"][1])[2][3][2][0][2][0]
    assert pop == ("BlockPool.get_new_blocks", [5, 3], [
        ("FreeKVCacheBlockQueue.popleft_n", [5, 3], []),
        *NO_HASH, ("BlockPool._maybe_evict_cached_block", True, [])])
    asked = new_c["calls"][1]["children"][3]["children"][0]["children"][0]["children"][1:]
    assert [c["args"] for c in asked] == [{"block": 5}, {"block": 3}]
    # decodes of b: the last block fills (11, 12 tokens), then none is left: refused
    assert [tree(n)[1] for n in (*dec_b1["calls"], *dec_b2["calls"])] == [[[]], [[]]]
    assert dec_b3["ok"] is False and [tree(n) for n in dec_b3["calls"]] == [
        ("KVCacheManager.allocate_slots", None, [
            SKIP,
            (f"{U}.get_num_blocks_to_allocate", 1, [(f"{F}.get_num_blocks_to_allocate", 1, [])])])]


def test_a_hybrid_model_fans_out_and_the_window_frees_what_slid_out(tmp_path):
    ops = run(tmp_path, [
        {"config": {"groups": [{"type": "full"}, {"type": "sliding_window", "sliding_window": 8}],
                    "block_size": 4, "num_blocks": 20}},
        {"op": "new", "id": "a", "prompt": list(range(1, 15))},
        {"op": "decode", "id": "a", "token": 99},
        {"op": "free", "id": "a"}])
    new_a, dec, free_a = ops
    miss = {"blocks": [[], []], "hit_tokens": 0}
    assert tree(new_a["calls"][0]) == lookup(H, miss, [F, S])
    alloc = tree(new_a["calls"][1])
    assert alloc[1] == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert [c[0] for c in alloc[2]] == [
        f"{H}.get_num_blocks_to_allocate", f"{H}.remove_skipped_blocks",
        f"{H}.get_num_blocks_to_allocate", f"{H}.allocate_new_blocks", f"{H}.cache_blocks"]
    assert alloc[2][3][2] == [
        (f"{F}.allocate_new_blocks", [1, 2, 3, 4], [("BlockPool.get_new_blocks", [1, 2, 3, 4],
         [("FreeKVCacheBlockQueue.popleft_n", [1, 2, 3, 4], []), *NO_HASH * 4])]),
        (f"{S}.allocate_new_blocks", [5, 6, 7, 8], [("BlockPool.get_new_blocks", [5, 6, 7, 8],
         [("FreeKVCacheBlockQueue.popleft_n", [5, 6, 7, 8], []), *NO_HASH * 4])])]
    # the decode: the window's first block (5) slid out and goes back to the free queue
    # (vLLM calls every manager's; full attention's returns at once)
    skipped = dec["calls"][0]["children"][0]
    assert tree(skipped) == (f"{H}.remove_skipped_blocks", None, [
        (f"{F}.remove_skipped_blocks", None, []),
        (f"{S}.remove_skipped_blocks", None, [("BlockPool.free_blocks", None, [
            ("FreeKVCacheBlockQueue.prepend_n", None, []),
            ("FreeKVCacheBlockQueue.append_n", None, [])])])])
    free_5 = skipped["children"][1]["children"][0]
    assert free_5["args"] == {"ordered_blocks": [5]}
    assert [c["args"] for c in free_5["children"]] == [{"blocks": []}, {"blocks": [5]}]
    assert dec["block_table"] == [[1, 2, 3, 4], [0, 6, 7, 8]]
    assert dec["free_queue"]["after"]["tail"] == [18, 19, 5]
    assert [tree(c)[0] for c in free_a["calls"][0]["children"][0]["children"]] == [
        f"{F}.free", f"{S}.free"]
    # the window's table is [0, 6, 7, 8] (5 slid out): vLLM frees reversed(trim_null_head(...))
    sw_free = free_a["calls"][0]["children"][0]["children"][1]["children"][0]
    assert sw_free["args"] == {"ordered_blocks": [8, 7, 6]}


def test_depth_limits_the_tree_and_recording_off_patches_nothing(tmp_path):
    import kvcore.kv_cache_manager as kvm_module
    from kvcore.block_pool import BlockPool

    ops = run(tmp_path, FULL[:2], depth=2)
    deepest = max(len(n["call"]) for n in ops[0]["calls"][1]["children"])
    assert all(not c["children"] for c in ops[0]["calls"][1]["children"]) and deepest > 0
    before = (kvm_module.KVCacheManager.allocate_slots, BlockPool.get_new_blocks)
    with CallRecorder():
        assert kvm_module.KVCacheManager.allocate_slots is not before[0]
    assert (kvm_module.KVCacheManager.allocate_slots, BlockPool.get_new_blocks) == before


def test_the_cli_prints_trees_or_json_lines(tmp_path):
    path = tmp_path / "ops.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in FULL[:3]))
    runner = CliRunner()
    res = runner.invoke(app, ["script", str(path), "--calls"])
    assert res.exit_code == 0, res.output
    assert "KVCacheManager.allocate_slots(request=a, num_new_tokens=10" in res.stdout
    assert "FreeKVCacheBlockQueue.popleft_n(n=3) -> [1, 2, 3]" in res.stdout
    res = runner.invoke(app, ["script", str(path), "--calls", "--json"])
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert [x.get("op") for x in lines] == ["new", "decode", "summary"]
    assert lines[0]["calls"][1]["call"] == "KVCacheManager.allocate_slots"
    res = runner.invoke(app, ["script", str(path), "--json"])
    assert res.exit_code == 2 and res.stderr.startswith("error: option --json: needs --calls")
    res = runner.invoke(app, ["script", str(path), "--calls", "--view"])   # --view was dropped
    assert res.exit_code == 2 and res.stdout == "" and res.stderr == (
        "error: option --view: not with --calls: one renders block tables, the other call "
        "trees; give one\n")


def test_the_walkthrough_shows_real_output():
    """docs/walkthrough.md's trees are what `--calls` prints (at 100 columns) for the shipped
    op scripts: a changed chain shows up here."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "walkthrough.md").read_text()
    blocks = re.findall(r"```\n(op .*?)\n```", doc, flags=re.DOTALL)
    assert len(blocks) == 6
    printed = ""
    for name in ("decode-paths", "four-paths"):
        res = CliRunner().invoke(app, ["script", str(root / "traces" / f"{name}.ops.jsonl"),
                                       "--calls"], env={"COLUMNS": "100"})
        assert res.exit_code == 0, res.output
        printed += res.stdout
    for block in blocks:
        for tree_text in block.split("\n\n"):
            assert tree_text in printed, tree_text[:200]


def test_every_method_a_layer_names_is_defined_on_that_layer():
    """A method a layer names but none of its classes defines is never recorded there: the
    managers' layer named the coordinator's `allocate_new_computed_blocks`, and left out their
    own `allocate_external_computed_blocks`, whose blocks then showed under the coordinator."""
    import importlib

    import kvcore.managers.registry  # noqa: F401  (every manager class, for `_classes`)
    from kvcore.call_tree import LAYERS, _classes

    for module, name, methods in LAYERS:
        classes = _classes(getattr(importlib.import_module(module), name))
        assert [m for m in methods if not any(m in c.__dict__ for c in classes)] == [], name


def test_a_connectors_tokens_allocate_under_the_manager():
    from kvtest_helpers import make_manager, make_request

    mgr = make_manager(8, bs=4, enable_caching=True)
    with CallRecorder() as rec:
        rec.watch(mgr)
        mgr.allocate_slots(make_request("a", range(1, 11), bs=4), 2,
                           num_external_computed_tokens=8)
    adopt = next(c for c in rec.take()[0].children
                 if c.call.endswith("allocate_new_computed_blocks"))
    assert tree(adopt.to_dict()) == (f"{U}.allocate_new_computed_blocks", None, [
        (f"{F}.add_local_computed_blocks", None, [("BlockPool.touch", None, [])]),
        (f"{F}.allocate_external_computed_blocks", None, [
            ("BlockPool.get_new_blocks", [1, 2], [
                ("FreeKVCacheBlockQueue.popleft_n", [1, 2], []), *NO_HASH, *NO_HASH])])])
