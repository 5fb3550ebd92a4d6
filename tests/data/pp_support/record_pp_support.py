"""Dev tool (not a test, not run by CI): which architectures in vLLM 0.33.0's registry implement
`SupportsPP` (-> answers.json: true, false, or why the class would not import on this CPU).
From the project root:

    HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR PYTHONPATH=$HOME/.cache/vllm-oracle/src \\
        ~/.cache/vllm-oracle/venv/bin/python tests/data/pp_support/record_pp_support.py \\
        tests/data/pp_support/answers.json
"""
# ruff: noqa
import json, sys, importlib
from vllm.model_executor.models.registry import ModelRegistry
from vllm.model_executor.models.interfaces import supports_pp
out = {}
for arch, lazy in sorted(ModelRegistry.models.items()):
    try:
        mod = importlib.import_module(lazy.module_name)
        cls = getattr(mod, lazy.class_name)
        out[arch] = bool(supports_pp(cls))
    except BaseException as e:
        out[arch] = f"error: {type(e).__name__}: {e}"[:200]
json.dump(out, open(sys.argv[1], "w"), indent=1, sort_keys=True)
print("done", len(out), sum(v is True for v in out.values()), sum(v is False for v in out.values()), flush=True)
