"""Patch a COPY of the oracle tool (run inside it) so `sched.py` and `sched_offload.py` pass a
trace line's `lora` and `cache_salt` to vLLM's `Request`: adapters numbered 1, 2, 3, ... by
first appearance in the file, as kvcli numbers them; the adapter's path blanked after
construction (vLLM asserts a non-empty one; a trace carries none, and kvcli hashes ""). No
`LoRAConfig` is set (no `max_loras` limit; kvcli models none). Checked: on traces without LoRA
or salt the copy's answers equal the real oracle's byte for byte."""
import re
from pathlib import Path

for fn in ("sched.py", "sched_offload.py"):
    s = Path(fn).read_text()
    # keep lora / cache_salt from the trace line
    old = '                         priority=int(r.get("priority", 0))))'
    assert s.count(old) == 1, fn
    s = s.replace(old, '                         priority=int(r.get("priority", 0)),\n'
                  '                         lora=r.get("lora"), cache_salt=r.get("cache_salt")))')
    # module-level helper: LoRARequest ids by first appearance in file order
    s = s.replace("from vllm.v1.request import Request",
                  "from vllm.lora.request import LoRARequest  # noqa: E402\n"
                  "_LORA_IDS: dict = {}\n"
                  "def _lora_kw(r):\n"
                  "    kw = {}\n"
                  "    if r.get('lora') is not None:\n"
                  "        lr = LoRARequest(str(r['lora']), _LORA_IDS[str(r['lora'])], lora_path='x')\n"
                  "        lr.lora_path = ''  # kvcli's model: no path (vLLM asserts a non-empty one at construction)\n"
                  "        kw['lora_request'] = lr\n"
                  "    if r.get('cache_salt') is not None:\n"
                  "        kw['cache_salt'] = r['cache_salt']\n"
                  "    return kw\n"
                  "from vllm.v1.request import Request", 1)
    n = 0
    def rep(m):
        global n
        n += 1
        return m.group(0).replace("block_hasher=", "**_lora_kw(r), block_hasher=")
    s = re.sub(r"Request\(\s*request_id=r\[\"id\"\].*?block_hasher=", rep, s, flags=re.DOTALL)
    assert n >= 1, fn
    # fill ids after reading
    s = s.replace("    return cfg, reqs", "    _LORA_IDS.clear()\n    for _r in reqs:\n"
                  "        if _r.get('lora') is not None: _LORA_IDS.setdefault(str(_r['lora']), len(_LORA_IDS) + 1)\n"
                  "    return cfg, reqs", 1)
    Path(fn).write_text(s)
    print(fn, n)
