# ruff: noqa
"""Dev tool (not a test, not run by CI): vLLM 0.33.0's schedulers over the KV cache groups of the
classes ../refused_lifted lifted (make_lifted.py's traces), step by step.

    R=~/.cache/vllm-oracle
    ORACLE_TOOL=/path/to/oracle/tool VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR \\
        $R/venv/bin/python tests/data/sched_lifted/oracle_lifted.py \\
        IN.trace.jsonl=OUT.expected.jsonl ...

../sched_chunked_mixed/oracle_chunked_mixed.py (the oracle's `sched.py` loop, the Scheduler or
AsyncScheduler built by ../oracle_mixed.py's `build` over groups of their own block sizes) with
two more group types, built as the real classes' specs so that the managers and the events'
`kv_cache_spec_kind` are theirs:

- `{"type": "mla"}`: an MLAAttentionSpec (Sarvam's and LongCat-Flash's MLA layers), managed by
  FullAttentionManager, its events `mla_attention`; one latent a token (the page has no K/V
  factor of 2, so its head is twice a full group's at the same page);
- `{"type": "sink_full", "sink_len": N}`: a SinkFullAttentionSpec (openPangu V2's static sink
  layers), whose manager vLLM 0.33 registers as SinkFullAttentionManager.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from oracle_batch import answer, oracle  # noqa: E402  (exits without $ORACLE_TOOL)
import oracle_mixed  # noqa: E402

_group_specs = oracle_mixed.group_specs


def group_specs(cfg: dict, mode: str, spec_blocks: int = 0) -> list:
    import dataclasses

    from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheGroupSpec,
                                            MLAAttentionSpec, SinkFullAttentionSpec)

    plain = {**cfg, "groups": [{"type": "full", "block_size": g.get("block_size")}
                               if g["type"] in ("mla", "sink_full") else g
                               for g in cfg["groups"]]}
    out = []
    for g, grp in zip(cfg["groups"], _group_specs(plain, mode, spec_blocks)):
        s = grp.kv_cache_spec
        if g["type"] == "mla":
            spec = MLAAttentionSpec(block_size=s.block_size, num_kv_heads=1,
                                    head_size=2 * s.head_size, dtype=s.dtype)
        elif g["type"] == "sink_full":
            spec = SinkFullAttentionSpec(block_size=s.block_size, num_kv_heads=1,
                                         head_size=s.head_size, dtype=s.dtype,
                                         sink_len=int(g["sink_len"]))
        else:
            out.append(grp)
            continue
        assert spec.page_size_bytes == s.page_size_bytes, (spec, s)
        out.append(dataclasses.replace(grp, kv_cache_spec=spec))
    return out


def main() -> int:
    oracle_mixed.group_specs = group_specs
    oracle.build_scheduler = oracle_mixed.build
    rc = 0
    for pair in sys.argv[1:]:
        inp, outp = pair.split("=", 1)
        cfg, reqs = oracle_mixed.read_trace(inp, ("full", "sliding_window", "mla", "sink_full"))
        try:
            rc = answer(inp, outp, cfg, reqs) or rc
        except SystemExit as err:       # (the start-up check: not an Exception)
            with open(outp, "w") as out:
                out.write(json.dumps({"error": f"SystemExit: {err}"}) + "\n")
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
