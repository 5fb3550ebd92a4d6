"""An op script's request past max_model_len in a group that masks the blocks it caches: vLLM
0.33's `cache_full_blocks` asserts that a one-token sliding window's mask spans the slice it
caches, where kvcli cached the slice. Found by the oracle campaign of 2026-12-05 (4 of 24
window-1 op scripts; tests/data/sched_fresh/README.md). vLLM's engine never admits such a
prompt: only op scripts reach it. A Mamba group in align mode sizes its table by the tokens
uncapped (`num_tokens_main_model`, single_type_kv_cache_manager.py:1815), so it holds every
block it caches and nothing fails."""

from __future__ import annotations

import json

from test_hostile_options import refused

SAID = ("a request of {n} tokens fills {n} blocks but max_model_len gave it 2: vLLM 0.33 fails "
        "here (a one-token window masks the blocks it caches past the table: AssertionError)")


def _script(tmp_path, group: str, n: int):
    path = tmp_path / "ops.jsonl"
    path.write_text(f'{{"config": {{"groups": [{group}], "block_size": 1, "num_blocks": 20, '
                    f'"max_model_len": 2}}}}\n'
                    f'{{"op": "new", "id": "a", "prompt": {list(range(1, n + 1))}}}\n')
    return path


def test_a_masked_group_past_max_model_len_is_refused(tmp_path):
    path = _script(tmp_path, '{"type": "sliding_window", "sliding_window": 1}', 3)
    refused(["script", str(path)], f"error: {path}:2: field 'max_model_len': "
            + SAID.format(n=3))


def test_a_mamba_group_holds_the_uncapped_table(tmp_path):
    """Five tokens at max_model_len 2: the table's four nulls and the running state's block,
    whose state (the only full-block one) is cached."""
    from typer.testing import CliRunner

    from kvcli.app import app

    res = CliRunner().invoke(app, ["script", str(_script(tmp_path, '{"type": "mamba"}', 5))])
    assert res.exit_code == 0, res.output
    first = json.loads(res.stdout.splitlines()[0])
    assert (first["block_table"], first["free"]) == ([[0, 0, 0, 0, 1]], 18)
    assert json.loads(res.stdout.splitlines()[-1])["cached_block_hashes"] == 1
