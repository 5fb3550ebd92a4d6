# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33's SpeculativeConfig does with each method name of
MTPModelTypes (config/speculative.py) beside a target that drafts with MTP (the tiny
DeepSeek-V3 of ../../mtp_draft/2-tiny-deepseek-v3): the method it keeps, the warnings it logs,
or its refusal (-> method_names.json), for tests/test_spec_method_names.py.

    R=~/.cache/vllm-oracle
    HF_HUB_OFFLINE=1 PYTHONPATH=$R/src $R/venv/bin/python \\
        tests/data/weights_census/drafts2/record_method_names.py
"""
import json, logging
from pathlib import Path
from typing import get_args

import vllm
from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig
from vllm.config.speculative import MTPModelTypes

HERE = Path(__file__).resolve().parent
TARGET = HERE.parents[1] / "mtp_draft" / "2-tiny-deepseek-v3" / "target"


class Kept(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def main():
    kept = Kept()
    logging.getLogger("vllm.config.speculative").addHandler(kept)
    mc = ModelConfig(model=str(TARGET), skip_tokenizer_init=True, seed=0, max_model_len=4096)
    out = {"vllm_version": vllm.__version__, "target": str(TARGET.relative_to(HERE.parents[1])),
           "num_speculative_tokens": 1, "names": {}}
    for name in get_args(MTPModelTypes):
        kept.lines.clear()
        try:
            sc = SpeculativeConfig(method=name, num_speculative_tokens=1, target_model_config=mc,
                                   target_parallel_config=ParallelConfig())
            rec = {"method": sc.method,
                   "draft_architectures": list(sc.draft_model_config.architectures)}
        except Exception as e:
            rec = {"refused": f"{type(e).__name__}: {e}"}
        rec["warnings"] = list(kept.lines)
        out["names"][name] = rec
    (HERE / "method_names.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
