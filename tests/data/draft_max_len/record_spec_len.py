# ruff: noqa
"""Record what vLLM 0.33 does with `--speculative-config`'s own `max_model_len` (->
spec_max_len.json): `ModelConfig`, `SpeculativeConfig` and `VllmConfig` built by vLLM's own code
as record_draft_len.py builds them (the same target, Llama-3.1-8B, and its drafts/, which that
tool writes), no model built: ngram (the draft is the target) and the EAGLE-3 drafts
`default-2048` (its RoPE only sizes its cache), `yarn-2048` and `yarn-8192`, at the target's
`--max-model-len` none and 4,096 and the key 1,024 to 200,000; then ngram's key 0 and true.

A development tool, never run by the tests. From the project root:

    ulimit -v 12000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=INFO \
        PYTHONPATH=$HOME/.cache/vllm-oracle/src timeout 600 \
        ~/.cache/vllm-oracle/venv/bin/python tests/data/draft_max_len/record_spec_len.py
"""
import json, logging, os, sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vllm.config import DeviceConfig, ModelConfig, ParallelConfig, SpeculativeConfig, VllmConfig

HERE = Path(__file__).resolve().parent
TARGET = HERE.parent / "eagle_draft" / "1-llama31-8b-eagle3" / "target"
DRAFTS = (("ngram", None), ("eagle3", "default-2048"), ("eagle3", "yarn-2048"),
          ("eagle3", "yarn-8192"))


class Grab(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        msg = record.getMessage()
        if "max_model_len" in msg or "max model len" in msg:
            self.lines.append(msg)


def case(grab, method, draft, mml, x):
    grab.lines.clear()
    rec = {"method": method, "draft": draft, "max_model_len": mml, "spec_max_model_len": x}
    try:
        mc = ModelConfig(model=str(TARGET), skip_tokenizer_init=True, seed=0, max_model_len=mml)
        pc = ParallelConfig()
        kw = (dict(prompt_lookup_max=3) if method == "ngram"
              else dict(model=str(HERE / "drafts" / draft)))
        sc = SpeculativeConfig(method=method, num_speculative_tokens=3, max_model_len=x,
                               target_model_config=mc, target_parallel_config=pc, **kw)
        before = mc.max_model_len
        vc = VllmConfig(model_config=mc, parallel_config=pc, speculative_config=sc,
                        device_config=DeviceConfig(device="cpu"))
        rec.update(target_before=before, target_after=vc.model_config.max_model_len,
                   draft_max_model_len=sc.draft_model_config.max_model_len,
                   shares_positions=sc.draft_shares_target_positions(),
                   use_v2_model_runner=vc.use_v2_model_runner,
                   logs=[m for m in grab.lines if "Using max model len" not in m])
    except Exception as err:     # recorded, as vLLM words it (its first line)
        # (pydantic's first error's own message, without its links)
        why = err.errors()[0]["msg"] if hasattr(err, "errors") else str(err).splitlines()[0]
        rec["refused"] = f"{type(err).__name__}: {why}"
    print(json.dumps(rec), file=sys.stderr)
    return rec


def main():
    grab = Grab()
    logging.getLogger("vllm").addHandler(grab)
    logging.getLogger("vllm").setLevel(logging.INFO)
    cases = [case(grab, method, draft, mml, x) for method, draft in DRAFTS
             for mml in (None, 4096) for x in (1024, 2048, 4096, 8192, 200000)]
    cases += [case(grab, "ngram", None, 4096, x) for x in (0, True)]
    out = {"vllm": __import__("vllm").__version__, "target": "Llama-3.1-8B "
           "(../eagle_draft/1-llama31-8b-eagle3/target)", "cases": cases}
    (HERE / "spec_max_len.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
