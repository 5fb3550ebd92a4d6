"""Record the max_model_len vLLM 0.33 runs a target at beside an EAGLE / EAGLE-3 draft
(-> answers.json): `ModelConfig`, `SpeculativeConfig` and `VllmConfig` built by vLLM's own code
(`_maybe_override_draft_max_model_len`, `_maybe_override_draft_max_position_embeddings`,
`VllmConfig._limit_max_model_len_to_draft`), no model built. It writes each case's draft
config.json under drafts/ (the target is ../eagle_draft/1-llama31-8b-eagle3/target, Llama-3.1-8B).

A development tool, never run by the tests. From the project root:

    ulimit -v 12000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=WARNING \
        PYTHONPATH=$HOME/.cache/vllm-oracle/src timeout 600 \
        ~/.cache/vllm-oracle/venv/bin/python tests/data/draft_max_len/record_draft_len.py
"""
# ruff: noqa
import json, logging, os, sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vllm.config import DeviceConfig, ModelConfig, ParallelConfig, SpeculativeConfig, VllmConfig

HERE = Path(__file__).resolve().parent
TARGET = HERE.parent / "eagle_draft" / "1-llama31-8b-eagle3" / "target"
BASE = json.loads((HERE.parent / "eagle_draft" / "1-llama31-8b-eagle3" / "draft"
                   / "config.json").read_text())
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048}
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
# name -> (method, draft max_position_embeddings, rope_scaling or None, draft architecture)
DRAFTS = {
    "default-2048": ("eagle3", 2048, None, None),
    "yarn-2048": ("eagle3", 2048, YARN, None),
    "yarn-8192": ("eagle3", 8192, YARN, None),
    "llama3-16384": ("eagle3", 16384, LLAMA3, None),
    "linear-2048": ("eagle3", 2048, {"rope_type": "linear", "factor": 2.0}, None),
    "dynamic-4096": ("eagle3", 4096, {"rope_type": "dynamic", "factor": 2.0}, None),
    "eagle-yarn-2048": ("eagle", 2048, YARN, "LlamaForCausalLM"),
}
MAX_MODEL_LENS = (None, 4096, 1024)      # the target's --max-model-len


class Grab(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        msg = record.getMessage()
        if "draft model's max_model_len" in msg:
            self.lines.append(msg)


def draft_dir(name, max_pos, rope, arch):
    cfg = dict(BASE, max_position_embeddings=max_pos)
    if rope is not None:
        cfg["rope_scaling"] = rope
    if arch is not None:
        cfg["architectures"] = [arch]
        cfg.pop("draft_vocab_size")
    d = HERE / "drafts" / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return d


SUBSTITUTIONS = ["engine_args only: the unspecified CPU platform's device_type set to 'cpu' "
                 "(DeviceConfig's 'auto' needs one; nothing here reads it otherwise)"]


def engine_args():
    """`EngineArgs.create_engine_config`, as `vllm serve` builds its config: the scheduler's
    defaults are drawn before VllmConfig lowers max_model_len."""
    from vllm.engine.arg_utils import EngineArgs
    from vllm.platforms import current_platform

    current_platform.device_type = "cpu"
    out = []
    for name in ("yarn-2048", "default-2048"):
        for mml in (None, 4096):
            for chunked in (True, False):
                ea = EngineArgs(model=str(TARGET), skip_tokenizer_init=True, max_model_len=mml,
                                enable_chunked_prefill=chunked, speculative_config={
                                    "method": "eagle3", "model": str(HERE / "drafts" / name),
                                    "num_speculative_tokens": 3})
                vc = ea.create_engine_config()
                sc = vc.scheduler_config
                out.append({"draft": name, "max_model_len": mml, "enable_chunked_prefill": chunked,
                            "model_max_model_len": vc.model_config.max_model_len,
                            "max_num_batched_tokens": sc.max_num_batched_tokens,
                            "max_num_seqs": sc.max_num_seqs})
                print(json.dumps(out[-1]), file=sys.stderr)
    return out


def main():
    grab = Grab()
    logging.getLogger("vllm").addHandler(grab)
    cases = []
    for name, (method, max_pos, rope, arch) in DRAFTS.items():
        d = draft_dir(name, max_pos, rope, arch)
        for mml in MAX_MODEL_LENS:
            grab.lines.clear()
            rec = {"draft": name, "method": method, "max_model_len": mml}
            try:
                mc = ModelConfig(model=str(TARGET), skip_tokenizer_init=True, seed=0,
                                 max_model_len=mml)
                pc = ParallelConfig()
                sc = SpeculativeConfig(method=method, model=str(d), num_speculative_tokens=3,
                                       target_model_config=mc, target_parallel_config=pc)
                before = mc.max_model_len
                vc = VllmConfig(model_config=mc, parallel_config=pc, speculative_config=sc,
                                device_config=DeviceConfig(device="cpu"))
                rec.update(target_before=before, target_after=vc.model_config.max_model_len,
                           draft_max_model_len=sc.draft_model_config.max_model_len,
                           draft_max_position_embeddings=getattr(
                               sc.draft_model_config.hf_config, "max_position_embeddings",
                               None),
                           shares_positions=sc.draft_shares_target_positions(),
                           use_v2_model_runner=vc.use_v2_model_runner,
                           warnings=list(grab.lines))
            except Exception as err:     # recorded, as vLLM words it
                rec["refused"] = f"{type(err).__name__}: {err}"
            cases.append(rec)
            print(json.dumps(rec), file=sys.stderr)
    out = {"vllm": __import__("vllm").__version__, "target": "Llama-3.1-8B "
           "(../eagle_draft/1-llama31-8b-eagle3/target)", "cases": cases,
           "engine_args": engine_args(), "substitutions": SUBSTITUTIONS}
    (HERE / "answers.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
