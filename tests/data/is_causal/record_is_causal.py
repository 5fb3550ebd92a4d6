# ruff: noqa
"""Record vLLM 0.33's KV cache specs for ../kv_spec_census/'s configs of the classes named on
the command line with ``is_causal`` set false, null and true (-> stdout; answers.json). A
development tool, never run by the tests; README.md gives the command."""
import json, sys, importlib.util
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "record_kv_specs", ROOT / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(spec); spec.loader.exec_module(rks)
rows = json.loads((ROOT / "kv_spec_census" / "answers.json").read_text())
rows = rows["architectures"]
rks.rc.rqn.rmm_main_env()
out = {}
for arch in sys.argv[1:]:
    cfg = dict(rows[arch]["config"])
    for v in (False, None, True):
        c = {**cfg, "is_causal": v}
        try:
            r = rks.build(arch, c)
            specs = r.get("specs", [])
            out[f"{arch} is_causal={json.dumps(v)}"] = {
                "n_specs": len(specs), "types": sorted({s["type"] for s in specs}),
                "is_attention_free": r.get("is_attention_free")}
        except Exception as e:
            out[f"{arch} is_causal={json.dumps(v)}"] = {"error": f"{type(e).__name__}: {e}"[:300]}
        print(arch, v, out[f"{arch} is_causal={json.dumps(v)}"], file=sys.stderr, flush=True)
print(json.dumps(out, indent=1))
