"""Dev tool (not a test): turn traces stamped by ../sched_spec/make_spec_cases.py into EAGLE
cases for oracle_eagle.py, in place.

    python3 tests/data/sched_spec_eagle/stamp_eagle.py TRACE...

Each config line gets `"spec_method": "eagle3"`, its K folded into 1-4 (5 becomes 1), and, for
about one case in four (drawn from a generator seeded by the file's name, crc32, so a rerun
writes the same case), `"disable_lookahead_block_hashes": true`: vLLM's legacy block hashes with
the EAGLE trailing-block drop in place of lookahead hashes.
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
        rng = random.Random(zlib.crc32(b"eagle:" + Path(t).name.encode()))
        cfg["spec_method"] = "eagle3"
        cfg["num_speculative_tokens"] = 1 + (cfg["num_speculative_tokens"] - 1) % 4
        if rng.random() < 0.25:
            cfg["disable_lookahead_block_hashes"] = True
        Path(t).write_text("\n".join([json.dumps({"config": cfg}), *lines[1:]]) + "\n")


if __name__ == "__main__":
    main()
