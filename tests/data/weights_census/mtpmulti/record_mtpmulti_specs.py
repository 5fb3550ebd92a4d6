# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's MTP draft of the multi-module targets of configs.py
(DeepSeek-V3's and GLM-4.5's num_nextn_predict_layers 2 or 3) and of Step-3.5's hub config
(3 modules, ../mm_step3/step3p5/step3p5-hub.config.json): the draft's class, KV cache specs
and groups with the target's at K 1 (-> specs_answers.json, ../mtp3/record_mtp3_specs.py's
way: ../../mtp_draft/record_mtp_models.py's `build`, TRITON_MLA for DeepSeek's MLA, FLASH_ATTN
for GLM's GQA), and what SpeculativeConfig does at K 1..6 for each (-> k_rules.json: the
method kept, n_predict, use_multi_module_mtp(), the warnings vllm.config.speculative logs, or
its refusal):

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        nice -n 19 $R/venv/bin/python tests/data/weights_census/mtpmulti/record_mtpmulti_specs.py
"""
import importlib.util, json, logging, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_mtp_models", HERE.parents[1] / "mtp_draft" / "record_mtp_models.py")
rmm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rmm)
_c = importlib.util.spec_from_file_location("configs", HERE / "configs.py")
configs = importlib.util.module_from_spec(_c)
_c.loader.exec_module(configs)
MLA = rmm.BACKEND
GQA = rmm.AttentionBackendEnum.FLASH_ATTN
rmm.current_platform.get_attn_backend_cls = lambda *a, **k: rmm.BACKEND.get_path()
SUBSTITUTIONS = rmm.SUBSTITUTIONS + [
    "attention backend: FLASH_ATTN for the GLM-4.5 targets' GQA layers (TRITON_MLA for "
    "DeepSeek-V3's MLA, as named above)"]
STEP = HERE.parent / "mm_step3" / "step3p5" / "step3p5-hub.config.json"


def _cfg(case):
    return json.loads(STEP.read_text()) if case == "step3p5-hub" else configs.config(case)


def _dir(case):
    rmm.BACKEND = GQA if "glm" in case else MLA
    d = Path(tempfile.mkdtemp())
    (d / "config.json").write_text(json.dumps(_cfg(case)))
    return d


rmm.preset_config = _dir


class _Keep(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.said = []

    def emit(self, record):
        self.said.append(record.getMessage())


def k_rules(case):
    from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig
    log = logging.getLogger("vllm.config.speculative")
    keep = _Keep()
    log.addHandler(keep)
    log.setLevel(logging.WARNING)
    mc = ModelConfig(model=str(_dir(case)), skip_tokenizer_init=True, seed=0,
                     trust_remote_code=True)
    out = {}
    for k in range(1, 7):
        keep.said = []
        try:
            sc = SpeculativeConfig(method="mtp", num_speculative_tokens=k, target_model_config=mc,
                                   target_parallel_config=ParallelConfig())
            out[str(k)] = {"method": sc.method, "num_speculative_tokens":
                           sc.num_speculative_tokens,
                           "n_predict": getattr(sc.draft_model_config.hf_config, "n_predict", None),
                           "use_multi_module_mtp": sc.use_multi_module_mtp(),
                           "warnings": list(keep.said)}
        except (ValueError, NotImplementedError) as e:
            out[str(k)] = {"refused": f"{type(e).__name__}: {e}", "warnings": list(keep.said)}
    log.removeHandler(keep)
    return out


def main():
    cases = list(configs.CASES) + ["step3p5-hub"]
    (HERE / "k_rules.json").write_text(json.dumps(
        {"cases": {c: k_rules(c) for c in cases}}, indent=1) + "\n")
    rmm.HERE = Path(tempfile.mkdtemp())     # (its answers.json written there, not kept)
    sys.argv[1:] = [c for c in configs.CASES if c != "glm-4.5-air-2mtp"]
    rmm.main()
    out = json.loads((rmm.HERE / "answers.json").read_text())
    out["substitutions"] = SUBSTITUTIONS
    (HERE / "specs_answers.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
