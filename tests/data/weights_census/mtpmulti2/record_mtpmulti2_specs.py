# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's MTP draft of the multi-module targets of configs.py at K 1
(the draft's class, KV cache specs and groups with the target's -> specs_answers.json) and what
SpeculativeConfig does at K 1..6 over each (-> k_rules.json: the method kept, n_predict,
use_multi_module_mtp(), the warnings vllm.config.speculative logs, or its refusal). One family
a run, each on its own recorder's substitutions (listed in the file, per case):

* `mla`: GLM-4.7-Flash and openPangu, ../../mtp_draft/record_mtp_models.py's `build`
  (TRITON_MLA), as ../../sparse_mla/record_glm_lite_mtp.py;
* `sparse`: DeepSeek-V3.2 and GLM-5, the same `build` on FLASH_ATTN_MLA_SPARSE with the
  platform's block size, as ../../sparse_mla/record_sparse_mtp.py (imported);
* `qwen3_next`: the Qwen3-Next targets, ../../mtp_draft/record_qwen3_next_mtp.py's `build`
  (imported: FLASH_ATTN, FlashInfer's GDN alignment, the hybrid start-up);
* `k_rules`: every case, SpeculativeConfig only.

    R=~/.cache/vllm-oracle
    for f in k_rules mla sparse qwen3_next; do
      ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        nice -n 19 $R/venv/bin/python \\
        tests/data/weights_census/mtpmulti2/record_mtpmulti2_specs.py $f; done
"""
import importlib.util, json, logging, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1]


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


configs = _load("configs", HERE / "configs.py")
# openPangu's config class (the checkpoints' remote code, ../openpangu/), registered on import
pangu_config = _load("pangu_config", HERE.parent / "openpangu" / "pangu_config.py")


def _dir(case):
    d = Path(tempfile.mkdtemp())
    (d / "config.json").write_text(json.dumps(configs.config(case)))
    return d


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
                           "draft_architectures": list(sc.draft_model_config.architectures),
                           "use_multi_module_mtp": sc.use_multi_module_mtp(),
                           "warnings": list(keep.said)}
        except (ValueError, NotImplementedError) as e:
            out[str(k)] = {"refused": f"{type(e).__name__}: {e}", "warnings": list(keep.said)}
    log.removeHandler(keep)
    return out


def _save(name, cases, substitutions=None):
    import torch, vllm
    path = HERE / name
    old = json.loads(path.read_text()) if path.exists() else {
        "vllm_version": vllm.__version__, "torch": torch.__version__, "cases": {}}
    if substitutions is not None:
        old.setdefault("substitutions", {}).update({c: substitutions for c in cases})
    old["cases"] = dict(sorted({**old["cases"], **cases}.items()))
    path.write_text(json.dumps(old, indent=1) + "\n")


def _rmm_family(rmm, cases, substitutions):
    rmm.preset_config = _dir
    rmm.HERE = Path(tempfile.mkdtemp())     # (its answers.json written there, not kept)
    sys.argv[1:] = list(cases)
    rmm.main()
    out = json.loads((rmm.HERE / "answers.json").read_text())
    _save("specs_answers.json", out["cases"], substitutions)


def main(family):
    if family == "k_rules":
        _save("k_rules.json", {c: k_rules(c) for c in configs.CASES})
    elif family == "mla":
        rmm = _load("record_mtp_models", DATA / "mtp_draft" / "record_mtp_models.py")
        _rmm_family(rmm, ["glm-4.7-flash-2mtp", "tiny-pangu-ultra-moe-2mtp"],
                    rmm.SUBSTITUTIONS + [pangu_config.SUBSTITUTION])
    elif family == "sparse":
        rsm = _load("record_sparse_mtp", DATA / "sparse_mla" / "record_sparse_mtp.py")
        _rmm_family(rsm.rmm, list(configs.SPARSE), rsm.SUBSTITUTIONS)
    elif family == "qwen3_next":
        rqn = _load("record_qwen3_next_mtp", DATA / "mtp_draft" / "record_qwen3_next_mtp.py")
        rqn.target_dir = _dir
        rqn.rmm_main_env()
        cases = {}
        for case in configs.QWEN3_NEXT:
            cases[case] = rqn.build(case, 1, with_params=True)
        _save("specs_answers.json", cases, rqn.SUBSTITUTIONS)


if __name__ == "__main__":
    main(sys.argv[1])
