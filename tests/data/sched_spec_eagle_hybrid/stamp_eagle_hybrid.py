"""Dev tool (not a test): turn hybrid traces stamped by ../sched_spec/make_spec_cases.py into
EAGLE-3 cases for ../sched_spec_eagle/oracle_eagle_hybrid.py, in place.

    python3 tests/data/sched_spec_eagle_hybrid/stamp_eagle_hybrid.py TRACE...

A trace with fewer than two KV cache groups is left alone (and named on stderr). Each other
config line gets `"spec_method": "eagle3"`, its K folded into 1-3 (4 becomes 1, 5 becomes 2),
its acceptance rate into 0.3-0.9 (0 becomes 0.3, 1 becomes 0.9) and, drawn from a generator
seeded by the file's name (crc32), so a rerun writes the same case:
- `"disable_lookahead_block_hashes": true` in about half the cases (the legacy hashes and the
  EAGLE block drop);
- `"eagle_groups": [0]` (the draft's layers in the first, full-attention group) in about half
  of each kind; always in a legacy case with a chunked local group (vLLM asserts that it
  never drops there: with no group flagged, every group would).
"""

import json
import random
import sys
import zlib
from pathlib import Path


def main() -> None:
    for t in sys.argv[1:]:
        lines = Path(t).read_text().splitlines()
        cfg = json.loads(lines[0])["config"]
        groups = cfg.get("groups") or []
        if len(groups) < 2:
            print(f"{t}: one group, left alone", file=sys.stderr)
            continue
        rng = random.Random(zlib.crc32(b"eagle-hybrid:" + Path(t).name.encode()))
        cfg["spec_method"] = "eagle3"
        cfg["num_speculative_tokens"] = 1 + (cfg["num_speculative_tokens"] - 1) % 3
        cfg["spec_acceptance_rate"] = min(0.9, max(0.3, cfg["spec_acceptance_rate"]))
        legacy = rng.random() < 0.5
        if legacy:
            cfg["disable_lookahead_block_hashes"] = True
        chunked = any(g["type"] == "chunked_local" for g in groups)
        if rng.random() < 0.5 or (legacy and chunked):
            cfg["eagle_groups"] = [0]
        Path(t).write_text("\n".join([json.dumps({"config": cfg}), *lines[1:]]) + "\n")


if __name__ == "__main__":
    main()
