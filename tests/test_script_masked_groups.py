"""An op script's request past max_model_len in a group that masks the blocks it caches: vLLM
0.33's `cache_full_blocks` asserts that a one-token sliding window's mask spans the slice it
caches (and a Mamba group indexes past its table), where kvcli cached the slice. Found by the
oracle campaign of 2026-12-05 (4 of 24 window-1 op scripts; tests/data/sched_fresh/README.md).
vLLM's engine never admits such a prompt: only op scripts reach it."""

from __future__ import annotations

import pytest
from test_hostile_options import refused

SAID = ("a request of {n} tokens fills {n} blocks but max_model_len gave it 2: vLLM 0.33 fails "
        "here (a group that masks its blocks, a one-token window or Mamba, caches past the "
        "table: AssertionError or IndexError)")


@pytest.mark.parametrize("group, n", [
    ('{"type": "sliding_window", "sliding_window": 1}', 3), ('{"type": "mamba"}', 5)])
def test_a_masked_group_past_max_model_len_is_refused(tmp_path, group, n):
    path = tmp_path / "ops.jsonl"
    path.write_text(f'{{"config": {{"groups": [{group}], "block_size": 1, "num_blocks": 20, '
                    f'"max_model_len": 2}}}}\n'
                    f'{{"op": "new", "id": "a", "prompt": {list(range(1, n + 1))}}}\n')
    refused(["script", str(path)], f"error: {path}:2: field 'max_model_len': "
            + SAID.format(n=n))
