"""Dev tool (not a test): turn EAGLE traces (../sched_spec_eagle/*.trace.jsonl, stamped by
its stamp_eagle.py) into MTP cases for oracle_mtp.py, written into DEST_DIR under the same
names.

    python3 tests/data/sched_spec_mtp/stamp_mtp.py DEST_DIR TRACE...

Each config line gets `"spec_method": "mtp"`; everything else (K, acceptance rate, seed,
`disable_lookahead_block_hashes`, the requests) is kept, so an MTP answer can be compared
line for line with the eagle3 answer of the same trace.
"""

import json
import sys
from pathlib import Path


def main() -> None:
    dest = Path(sys.argv[1])
    for t in sys.argv[2:]:
        lines = Path(t).read_text().splitlines()
        cfg = json.loads(lines[0])["config"]
        cfg["spec_method"] = "mtp"
        (dest / Path(t).name).write_text(
            "\n".join([json.dumps({"config": cfg}), *lines[1:]]) + "\n")


if __name__ == "__main__":
    main()
