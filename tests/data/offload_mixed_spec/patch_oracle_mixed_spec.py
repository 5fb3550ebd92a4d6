# ruff: noqa
"""Dev tool (not a test, not run by CI): patch a COPY of the oracle tool, already patched by
../offload_hybrid/, ../offload_mamba/, ../offload_mamba_partial/ and ../offload_mixed/, for
drafts and a prefix-match unit over KV cache groups of several block sizes (README.md here).
Run inside the copy, after the other four:

    python3 REPO/tests/data/offload_mixed_spec/patch_oracle_mixed_spec.py

Nothing of vLLM is changed, and a trace the mixed copy answered is answered byte for byte as
before. Two of the copy's own checks are widened:
  * `prefix_match_unit` with several block sizes: the mixed copy stopped it with its own
    assertion ("prefix_match_unit with several block sizes: not built"); nothing of vLLM
    refused it. This asserts what vLLM's `resolve_kv_cache_block_sizes` answers instead: the
    Scheduler's block the groups' lcm, the hash block the unit (the gcd without one). The
    partial copy already hashes the requests every unit tokens and hands the unit to CacheConfig;
  * a store job's key that is not among its group's `offload_keys` (`job_keys`): with drafts a
    Mamba group's state may be offered at a chunk its group's keys have not reached yet (the
    key is made from the request's hashes and its position recorded, `ReqContext`); the copy
    asserted it away. It is now sorted as the partial copy sorts a partial tail's key, by its
    position over ITS group's chunk (the partial copy used group 0's, one chunk size there),
    after its group's chunk keys before it.
"""
from pathlib import Path

fn = "sched_offload.py"
s = Path(fn).read_text()
assert "SIZES = [None]" in s, "apply the hybrid, mamba, partial and mixed patches first"


def rep(old, new):
    global s
    assert s.count(old) == 1, ("already patched, or not the mixed copy", old)
    s = s.replace(old, new)


rep('''            assert PARTIAL[0] is None, "prefix_match_unit with several block sizes: not built"
            assert (sbs, hbs) == (math.lcm(*sizes), math.gcd(*sizes)), (sbs, hbs, sizes)''',
    '''            assert (sbs, hbs) == (math.lcm(*sizes), PARTIAL[0] or math.gcd(*sizes)), \\
                (sbs, hbs, sizes, PARTIAL[0])''')
rep('''        if PARTIAL[0] is not None:
            # a partial tail's key: by its position, after its group's chunks before it''',
    '''        if PARTIAL[0] is not None or SIZES[0] is not None:
            # a partial tail's key: by its position, after its group's chunks before it''')
rep('''                    tpc = cs.config.kv_group_configs[0].tokens_per_chunk
                    order[k] = (gis.index(get_offload_group_idx(k)), pos / tpc - 1)''',
    '''                    gi = gis.index(get_offload_group_idx(k))
                    tpc = cs.config.kv_group_configs[
                        gi if SIZES[0] is not None else 0].tokens_per_chunk
                    order[k] = (gi, pos / tpc - 1)''')
Path(fn).write_text(s)
print("patched", fn)
