# ruff: noqa
"""Write scheduler-level traces for the newer groups: the requests of eight fresh hybrid cases
(tests/data/sched_fresh_hybrid, random token-id traces with preemptions and shared prefixes)
under other "groups" (the rest of each config line, async included, kept).

  python3 tests/data/managers_033/gen_sched.py
"""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "sched_fresh_hybrid"
FULL, CB = {"type": "full"}, {"type": "circular_buffer"}
CASES = {   # new name: (source case, groups)
    "cb-full-204": ("hseed204", [FULL, CB]),
    "cb-first-209": ("hseed209", [CB, FULL, {"type": "sliding_window", "sliding_window": 32}]),
    "cb-async-214": ("haseed214", [FULL, CB]),
    "rswa-alone-211": ("hseed211", [{"type": "rswa", "rswa_window": 24}]),
    "rswa-full-7156": ("hseed7156", [FULL, {"type": "rswa", "rswa_window": 16}]),
    "rswa-async-224": ("haseed224", [{"type": "rswa", "rswa_window": 40},
                                     {"type": "sliding_window", "sliding_window": 32}]),
    "rswa-cb-5213": ("hseed5213", [{"type": "rswa", "rswa_window": 8}, CB]),
    "rswa-async-225": ("haseed225", [FULL, {"type": "rswa", "rswa_window": 64}, CB]),
}

if __name__ == "__main__":
    (HERE / "sched").mkdir(exist_ok=True)
    for name, (src, groups) in CASES.items():
        lines = (SRC / f"{src}.trace.jsonl").read_text().splitlines()
        first = json.loads(lines[0])
        first["config"]["groups"] = groups
        (HERE / "sched" / f"{name}.trace.jsonl").write_text(
            "\n".join([json.dumps(first), *lines[1:]]) + "\n")
