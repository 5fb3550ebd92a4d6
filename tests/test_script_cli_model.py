"""`kvcli script --model ...`: a model's KV cache groups replace the op script's `groups`.

Expected block ids are worked out by hand from vLLM 0.33's rules (reference §2-§4): each group
takes its blocks from the one shared free queue in group order; `free` releases a request's
blocks group by group, tail first, hashed blocks appended at the tail and the unhashed partial
block prepended at the front (0.33's `prepend_n`); a hybrid hit needs every group to hit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.op_script import parse_script
from kvcore.engine.script_model import with_model

runner = CliRunner()
A = list(range(1, 41))                       # 40 tokens: 2 full blocks of 16 + 8
B = list(range(1, 33)) + list(range(99, 91, -1))   # a's first 32 tokens, then different
C = list(range(41, 81))                      # nothing shared with a


def _script(tmp_path, ops, config=None):
    p = tmp_path / "ops.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in [{"config": config or {}}, *ops]) + "\n")
    return str(p)


def _run(*args):
    res = runner.invoke(app, ["script", *args])
    assert res.exit_code == 0, res.output
    return [json.loads(x) for x in res.stdout.splitlines() if x.strip()]


def test_gpt_oss_two_groups_hit_and_front_of_queue(tmp_path):
    # gpt-oss-20b: group 0 = 12 sliding-window layers (W=128), group 1 = 12 full layers.
    ops = _script(tmp_path, [{"op": "new", "id": "a", "prompt": A}, {"op": "free", "id": "a"},
                             {"op": "new", "id": "b", "prompt": B}])
    new_a, free_a, new_b, summary = _run(ops, "--model", "gpt-oss-20b", "--num-blocks", "12")
    # 3 blocks a group (40 tokens < the window: no block is out of window), group 0 first.
    assert new_a["new_block_ids"] == [[1, 2, 3], [4, 5, 6]] and new_a["free"] == 11 - 6
    assert free_a["free"] == 11
    # Free queue after a: [6, 3, 7..11, 2, 1, 5, 4] (partials 3 then 6 prepended, full blocks
    # appended tail first). b hits a's two full blocks in both groups (32 tokens), then each
    # group takes one block from the front: 6 for group 0, 3 for group 1.
    assert new_b["hit"] == 32 and new_b["hit_block_ids"] == [[1, 2], [4, 5]]
    assert new_b["new_block_ids"] == [[6], [3]]
    assert new_b["block_table"] == [[1, 2, 6], [4, 5, 3]]
    assert summary["num_blocks"] == 12 and summary["cached_block_hashes"] == 4
    assert summary["prefix_cache_stats"] == {"requests": 2, "queries": 80, "hits": 32}


def test_gpt_oss_eviction_across_groups(tmp_path):
    # Only 7 usable blocks: c evicts a's cached blocks, and b then hits in neither group,
    # because the sliding-window group lost a's first block (a hybrid hit needs every group).
    ops = _script(tmp_path, [{"op": "new", "id": "a", "prompt": A}, {"op": "free", "id": "a"},
                             {"op": "new", "id": "c", "prompt": C}, {"op": "free", "id": "c"},
                             {"op": "new", "id": "b", "prompt": B}],
                  config={"num_blocks": 64, "block_size": 8})   # both overridden by flags
    lines = _run(ops, "--model", "gpt-oss-20b", "--num-blocks", "8", "--block-size", "16")
    assert lines[0]["new_block_ids"] == [[1, 2, 3], [4, 5, 6]]
    # Queue [6, 3, 7, 2, 1, 5, 4]: c takes 6, 3, 7 (group 0) and 2, 1, 5 (group 1), evicting
    # a's group-0 blocks 1, 2 and group-1 block 5; 4 stays cached (a's first full block).
    assert lines[2]["new_block_ids"] == [[6, 3, 7], [2, 1, 5]]
    # Queue after c: [5, 7, 4, 3, 6, 1, 2]. b: group 1 alone could hit block 4 (16 tokens) but
    # group 0 has nothing cached, so the hit is 0 and b takes 5, 7, 4 then 3, 6, 1.
    assert lines[4]["hit"] == 0
    assert lines[4]["new_block_ids"] == [[5, 7, 4], [3, 6, 1]]
    assert lines[-1]["free_blocks"] == 1 and lines[-1]["cached_block_hashes"] == 5


def test_gemma3_seven_groups(tmp_path):
    # Gemma-3-27B: 52 sliding + 10 full layers -> six sliding groups (9,9,9,9,8,8 layers) and
    # one full group, all at block size 16: a 20-token prompt takes 2 blocks in each, in order.
    ops = _script(tmp_path, [{"op": "new", "id": "a", "prompt": A[:20]},
                             {"op": "decode", "id": "a", "token": 7}, {"op": "free", "id": "a"}],
                  config={"num_blocks": 64, "max_model_len": 4096})
    new_a, dec, free_a, summary = _run(ops, "--model", "gemma-3-27b")
    assert new_a["new_block_ids"] == [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12],
                                      [13, 14]]
    assert new_a["free"] == 63 - 14 and dec["new_block_ids"] == [[]] * 7
    assert free_a["free"] == 63
    assert summary["cached_block_hashes"] == 7      # one full block per group


def test_explicit_geometry_and_mamba_block_size(tmp_path):
    ops = _script(tmp_path, [{"op": "new", "id": "a", "prompt": A[:20]}])
    # 4 layers, every other one sliding (1:1): a sliding group and a full group.
    new_a = _run(ops, "--layers", "4", "--kv-heads", "8", "--head-dim", "128",
                 "--sliding-window", "16", "--sliding-layers", "1:1", "--num-blocks", "20")[0]
    assert new_a["new_block_ids"] == [[1, 2], [3, 4]] and new_a["free"] == 15
    # Jamba: 28 Mamba + 4 attention layers; pages are unified at block size 80, so 20 tokens
    # take one block in each of the 8 groups (7 Mamba groups of 4 layers, 1 full group).
    new_j = _run(ops, "--model", "jamba-v0.1", "--num-blocks", "64")[0]
    assert new_j["new_block_ids"] == [[i] for i in range(1, 9)]


def test_num_blocks_from_gpu_memory_matches_kvcli_config(tmp_path):
    ops = _script(tmp_path, [{"op": "new", "id": "a", "prompt": A}])
    res = runner.invoke(app, ["config", "gpt-oss-20b", "--gpu-memory-gib", "80", "--json"])
    want = json.loads(res.stdout)["num_blocks"]
    new_a, summary = _run(ops, "--model", "gpt-oss-20b", "--gpu-memory-gib", "80")
    assert summary["num_blocks"] == want and new_a["free"] == want - 1 - 6


def test_precedence_flags_script_defaults(tmp_path):
    text = json.dumps({"config": {"max_model_len": 4096, "num_blocks": 50}}) + "\n"
    cfg, _ = parse_script(text)
    with_model(cfg, model="gpt-oss-20b")
    assert (cfg.max_model_len, cfg.num_blocks) == (4096, 50)           # the script's
    assert [g["type"] for g in cfg.groups] == ["sliding_window", "full"]
    assert cfg.groups[0]["sliding_window"] == 128
    cfg, _ = parse_script('{"config": {}}\n')
    with_model(cfg, model="gpt-oss-20b")
    assert (cfg.max_model_len, cfg.num_blocks) == (131072, 1024)      # model's, default
    cfg, _ = parse_script(text)
    with_model(cfg, model="gpt-oss-20b", max_model_len=2048, num_blocks=9)
    assert (cfg.max_model_len, cfg.num_blocks) == (2048, 9)           # the flags
    cfg, _ = parse_script(text)
    with_model(cfg, num_blocks=3, block_size=4)                        # no model: flags only
    assert (cfg.num_blocks, cfg.block_size, cfg.specs) == (3, 4, None)


def test_no_model_flags_override_the_script(tmp_path):
    ops = _script(tmp_path, [{"op": "new", "id": "a", "prompt": A}], config={"num_blocks": 64})
    assert _run(ops, "--num-blocks", "3")[0]["ok"] is False           # 2 usable blocks < 3 needed
    assert _run(ops, "--block-size", "8")[0]["new_block_ids"] == [[1, 2, 3, 4, 5]]


@pytest.mark.parametrize(("args", "message"), [
    (["--gpu-memory-gib", "80"], "option --gpu-memory-gib: needs a model"),
    (["--model", "gpt-oss-20b", "--gpu-memory-gib", "80", "--num-blocks", "5"],
     "option --num-blocks: give num_blocks or gpu_memory_gib, not both"),
    (["--sliding-window", "8"], "option --sliding-window: describes a model's layers"),
    (["--model", "gpt-oss-20b", "--model-config", "x.json"], "give exactly one of"),
    (["--model", "gpt-oss-20b", "--layers", "3"], "give exactly one of"),
    (["--model", "nope"], "unknown model 'nope'"),
    (["--block-size", "0"], "option --block-size: must be >= 1, got 0"),
    (["--model", "gpt-oss-20b", "--num-blocks", "0"], "option --num-blocks: must be >= 1"),
])
def test_bad_combinations_exit_2(tmp_path, args, message):
    ops = _script(tmp_path, [{"op": "new", "id": "a", "prompt": A}])
    res = runner.invoke(app, ["script", ops, *args])
    assert res.exit_code == 2, res.output
    assert res.stdout == ""
    err = res.stderr.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err, err


def test_model_options_keep_the_replays_kinds_and_help():
    # script.py spells these aliases out for mypy: their kind must stay the replay's, and
    # only the help panel differs
    from typing import get_args

    from kvcli import replay_options as ro
    from kvcli.commands import script

    for mine, replays in ((script.ScriptModelOpt, ro.ModelOpt),
                          (script.ScriptModelConfigOpt, ro.ModelConfigOpt),
                          (script.ScriptGpuMemOpt, ro.GpuMemOpt)):
        (kind, info), (replay_kind, replay_info) = get_args(mine), get_args(replays)
        assert kind == replay_kind
        assert info.rich_help_panel == script._M != replay_info.rich_help_panel
        assert info.param_decls == replay_info.param_decls and info.help == replay_info.help


def test_multimodal_options_size_the_pool_as_kvcli_config(tmp_path):
    # gemma-3-27b on 80 GiB: 18,204 blocks with its SigLIP tower, 18,849 without it (as `kvcli
    # config` and the replay size it: tests/test_mm_serving.py); the dotted spelling is joined
    # in kvcli's entry point, so it runs in a process of its own
    ops = _script(tmp_path, [{"op": "new", "id": "a", "prompt": A}])
    base = [ops, "--model", "gemma-3-27b", "--gpu-memory-gib", "80"]
    assert _run(*base)[-1]["num_blocks"] == 18_204
    assert _run(*base, "--limit-mm-per-prompt", '{"image": 0}')[-1]["num_blocks"] == 18_849
    assert _run(*base, "--language-model-only")[-1]["num_blocks"] == 18_849
    assert _run(*base, "--no-language-model-only")[-1]["num_blocks"] == 18_204
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-m", "kvcli", "script", *base,
                        "--limit-mm-per-prompt.image", "0"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(root)}, timeout=120, check=False)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["num_blocks"] == 18_849


NO_EFFECT = ("no effect on the pool unless it is sized from a model's gpu_memory_gib (they "
             "change the model's weights)")


@pytest.mark.parametrize(("args", "said"), [
    (["--model", "gemma-3-27b", "--gpu-memory-gib", "80", "--mm-encoder-tp-mode", "data"],
     [("option --mm-encoder-tp-mode: data: gemma-3-27b's class does not support it; vLLM "
       "falls back to weights (the tower split over TP)")]),
    (["--model", "llama-3.1-8b", "--gpu-memory-gib", "80", "--language-model-only"],
     [("option --language-model-only: no effect on llama-3.1-8b, which has no vision tower "
       "kvcli counts (on a text-only model vLLM builds no multimodal config)")]),
    (["--model", "gemma-3-27b", "--num-blocks", "64", "--limit-mm-per-prompt", '{"image": 0}',
      "--mm-encoder-tp-mode", "data"],
     [f"option --limit-mm-per-prompt: {NO_EFFECT}", f"option --mm-encoder-tp-mode: {NO_EFFECT}"]),
    (["--language-model-only"], [f"option --language-model-only: {NO_EFFECT}"]),
    (["--model", "gemma-3-27b", "--gpu-memory-gib", "80", "--language-model-only"], []),
])
def test_multimodal_options_that_change_nothing_are_said(tmp_path, args, said):
    ops = _script(tmp_path, [{"op": "new", "id": "a", "prompt": A}])
    res = runner.invoke(app, ["script", ops, *args])
    assert res.exit_code == 0, res.output
    assert [x.removeprefix("warning: ") for x in res.stderr.splitlines()] == said


@pytest.mark.parametrize(("args", "message"), [
    (["--limit-mm-per-prompt", '{"image": -1}'],
     "error: option --limit-mm-per-prompt: image: expected a count >= 0, got -1"),
    (["--mm-encoder-tp-mode", "tensor"],
     "error: option --mm-encoder-tp-mode: expected one of weights, data, got 'tensor'"),
])
def test_bad_multimodal_options_exit_2(tmp_path, args, message):
    ops = _script(tmp_path, [{"op": "new", "id": "a", "prompt": A}])
    res = runner.invoke(app, ["script", ops, "--model", "gemma-3-27b", "--gpu-memory-gib", "80",
                              *args])
    assert (res.exit_code, res.stdout, res.stderr.strip()) == (2, "", message)
