# ruff: noqa
"""Dev tool (not a test, not run by CI): patch a COPY of the oracle tool, already patched as
../offload_mixed_spec/README.md says (its five patches), so that `sched_offload.py` takes a
config line's `prefix_match_unit` without a Mamba group too (the copy's own check asked for
one; vLLM does not). Run inside the copy:

    python3 REPO/tests/data/offload_mixed_pmu/patch_oracle_mixed_pmu.py

Nothing else changes: the unit goes to vLLM's CacheConfig as before, and a trace with a Mamba
group runs every byte as before.
"""
from pathlib import Path

fn = "sched_offload.py"
s = Path(fn).read_text()
old = '''            and PARTIAL[0] > 0 and isinstance(user_cfg.get("groups"), list)
            and any(isinstance(x, dict) and x.get("type") == "mamba"
                    for x in user_cfg["groups"])):
        raise SystemExit("prefix_match_unit: a positive integer, with Mamba groups")'''
new = '''            and PARTIAL[0] > 0 and isinstance(user_cfg.get("groups"), list)):
        raise SystemExit("prefix_match_unit: a positive integer, with groups")'''
assert s.count(old) == 1, "apply the five patches of ../offload_mixed_spec first (or already patched)"
Path(fn).write_text(s.replace(old, new))
print("patched", fn)
