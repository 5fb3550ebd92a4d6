"""vLLM 0.33's native CPU KV offloading tier (`OffloadingConnector` + `CPUOffloadingManager`).

`keys.py` (chunk keys, chunk status, a request's context), `policy.py` (the policy contract and
registry), `lru.py` and `arc.py` (vLLM's two policies), `manager.py` (slots, offers, loads,
events; `manager_reports.py` its events drained and its stats), `op_script.py` (the manager
driven op by op, as the oracle's manager mode).
The behaviour in words: docs/offload.md.
"""
