"""Patch a COPY of the oracle tool (run inside it) so that `sched_offload.py` answers CPU-tier
traces with LoRA adapters and cache salts, over one group or hybrid `groups`.

No new patch: the two that exist compose. `../offload_hybrid/patch_oracle_hybrid.py` first
(`groups` in sched_offload.py), then `../sched_fresh_lora/patch_oracle_lora.py` (a line's `lora`
and `cache_salt` passed to vLLM's `Request`, adapters numbered by first appearance, as kvcli
numbers them). Neither touches what the other edits, and each asserts its anchors, so a drift
in the oracle stops here rather than answering wrongly.

    cp -r "$ORACLE_TOOL" /tmp/lhtool && (cd /tmp/lhtool && python3 $REPO/tests/data/offload_lora/patch_oracle.py)

(``$ORACLE_TOOL``: the oracle's tool folder, outside this repository; a development tool, never
run by the tests, which read only the answers recorded here.)

Checked: on traces without LoRA, salt or groups the copy answers byte for byte as the oracle
(README.md here lists the fixtures compared).
"""
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
runpy.run_path(str(HERE.parent / "offload_hybrid" / "patch_oracle_hybrid.py"))
runpy.run_path(str(HERE.parent / "sched_fresh_lora" / "patch_oracle_lora.py"))
