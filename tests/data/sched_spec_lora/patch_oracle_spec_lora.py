# ruff: noqa
"""Dev tool (not a test): run inside a COPY of the oracle tool already patched by
../sched_fresh_lora/patch_oracle_lora.py; writes `oracle_spec_lora.py` there, a copy of
../sched_spec/oracle_spec.py whose requests carry the trace line's `lora` and `cache_salt`
(the patched `sched.py`'s `_lora_kw`: adapters numbered by first appearance, as kvcli numbers
them), and which finds ../oracle_observe.py and kvcore's acceptance rule by this
repository's absolute paths.

    python3 $REPO/tests/data/sched_spec_lora/patch_oracle_spec_lora.py     # in the copy
"""
from pathlib import Path

DATA = Path(__file__).resolve().parents[1]          # tests/data
assert "_lora_kw" in Path("sched.py").read_text(), "apply patch_oracle_lora.py first"
s = (DATA / "sched_spec" / "oracle_spec.py").read_text()
old = 'priority=r["priority"], block_hasher=hasher)'
assert s.count(old) == 1
s = s.replace(old, 'priority=r["priority"], **oracle._lora_kw(r), block_hasher=hasher)')
# the copy lives in the tool's folder: point its repository paths (tests/data, and the
# repository root for kvcore's acceptance rule) at this repository
for n, where in ((1, DATA), (3, DATA.parents[1])):
    old = f"Path(__file__).resolve().parents[{n}]"
    assert old in s
    s = s.replace(old, f"Path({str(where)!r})")
Path("oracle_spec_lora.py").write_text(s)
print("wrote oracle_spec_lora.py")
