"""Dev tool (not a test): compare each MTP answer here with the eagle3 answer of the same
trace in ../sched_spec_eagle (plain or gzipped). Step lines must be equal once each event's
`kv_cache_spec_kind` "mla_attention" (this folder's MLA group) is read as eagle3's
"full_attention" (the count is printed); the summaries equal once `config.spec_method` and
`config._effective.speculative` are set aside (printed: what vLLM derived for the MTP draft).

    python3 tests/data/sched_spec_mtp/compare_eagle3.py tests/data/sched_spec_mtp/*.expected.jsonl*
"""

import gzip
import json
import sys
from pathlib import Path

EAGLE = Path(__file__).resolve().parent.parent / "sched_spec_eagle"


def lines(p: Path) -> list:
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt") as f:
        return [json.loads(x) for x in f if x.strip()]


def main() -> int:
    bad = 0
    for name in sys.argv[1:]:
        mine = lines(Path(name))
        stem = Path(name).name.removesuffix(".gz")
        ref_path = EAGLE / stem
        if not ref_path.exists():
            ref_path = EAGLE / (stem + ".gz")
        ref = lines(ref_path)
        sm, sr = mine.pop()["summary"], ref.pop()["summary"]
        mla = 0
        for rec in mine:
            for e in rec.get("events", ()):
                if e.get("kv_cache_spec_kind") == "mla_attention":
                    e["kv_cache_spec_kind"], mla = "full_attention", mla + 1
        spm = sm["config"]["_effective"].pop("speculative")
        spr = sr["config"]["_effective"].pop("speculative")
        methods = (sm["config"].pop("spec_method"), sr["config"].pop("spec_method"))
        same_steps = mine == ref
        first = next((i for i, (a, b) in enumerate(zip(mine, ref)) if a != b), None)
        same_common = {k: v for k, v in spm.items() if k in spr} == \
            {k: v for k, v in spr.items() if k != "method"} | {"method": "mtp"}
        ok = same_steps and sm == sr and same_common
        bad += not ok
        print(f"{stem}: {len(mine)} step lines {'equal' if same_steps else 'DIFFER at ' + str(first)},"
              f" ({mla} events' kind mla_attention), summary {'equal' if sm == sr else 'DIFFERS'}, methods {methods},"
              f" shared derived values {'equal' if same_common else 'DIFFER'};"
              f" mtp extras {json.dumps({k: v for k, v in spm.items() if k not in spr})}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
