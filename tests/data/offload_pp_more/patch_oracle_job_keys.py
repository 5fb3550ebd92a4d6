# ruff: noqa
"""Dev tool (not a test): patch a COPY of the oracle tool, already patched by
`../offload_hybrid/patch_oracle_hybrid.py`, `../offload_mamba/patch_oracle_mamba.py` and
`../offload_mamba_partial/patch_oracle_partial.py`, so that a store job's key which the
request's `offload_keys` do not hold yet sorts in the job's `keys` by its token position, as a
partial tail's key does, instead of failing the harness's own assertion in `job_keys`. vLLM
makes such a job when a Mamba state is cached at a chunk's end in a step that did not schedule
its request (so `_update_req_states` did not grow its keys): async PP with drafts, `ppmmt106072`
here (README.md). Nothing of vLLM is changed, and an answer the copy gave before is unchanged
(the harness stopped on every case this reaches). Run inside the copy, after the three:

    python3 REPO/tests/data/offload_pp_more/patch_oracle_job_keys.py
"""
from pathlib import Path

fn = "sched_offload.py"
s = Path(fn).read_text()
old = '''        if PARTIAL[0] is not None:
            # a partial tail's key: by its position, after its group's chunks before it
'''
new = '''        if PARTIAL[0] is not None or any(k not in order for k in js.keys):
            # a partial tail's key, or a Mamba state's past the request's keys: by its
            # position, after its group's chunks before it
'''
assert "PARTIAL = [None]" in s, "apply patch_oracle_partial.py first"
assert s.count(old) == 1, "already patched?"
Path(fn).write_text(s.replace(old, new))
print("patched", fn)
