"""Record what vLLM 0.33 keeps of a speculative draft's own on each tensor-parallel rank: the
EAGLE / EAGLE-3 drafts of ../eagle_draft/ and the MTP modules of ../mtp_draft/ (and fp8
checkpoints of both: an fp8 target, an fp8 draft with its ignore list, fp8 MTP targets of
./fp8/ and DeepSeek-V3's preset), at TP 1, 2, 4 and 8, every rank (-> drafts_answers.json).

A development tool, never run by the tests. The target is built by `initialize_model` on the
meta device and the draft by the V2 runner's own `load_eagle_model` (the sharing of the
embedding and LM head with the target included), as ../eagle_draft/record_draft_models.py
does; the bytes counted are the draft's parameters that are not the target's after that
sharing, and its buffers that are not the target's (vLLM's get_rope hands the draft the
target's RoPE cache object where their rope configs are equal). The dummy loader never calls
a draft's load_weights, which is where an EAGLE class learns from the checkpoint's names that
it has its own LM head or embedding (process_eagle_weight) and so keeps it: `checkpoint_names`
passes it the names a published checkpoint of its kind holds (EAGLE-3: yuhuili's layout,
`lm_head`, `d2t`, `t2d`, no embedding; EAGLE-1: no LM head, no embedding), as the class's
load_weights renames them. MTP classes never set the flags (the target's are shared). From the
project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/record_drafts.py [--all-ranks] [CASE ...]

It imports record_census.py beside it for every substitution (listed in the output); the
int-quantised DeepSeek-V3 targets (`drafts/deepseek-v3-*`) also int_quant/record_int_quant.py's
H100 platform, and need its $CT_PKGS on PYTHONPATH.
"""
# ruff: noqa
import importlib.util, json, sys, time, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
_spec = importlib.util.spec_from_file_location("record_census", HERE / "record_census.py")
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)                    # vLLM imported, every substitution applied
rqn, rmm, rdm = rc.rqn, rc.rmm, rc.rdm

import torch
import vllm
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         SpeculativeConfig, VllmConfig, set_current_vllm_config)
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.model_executor.models.utils import process_eagle_weight
from vllm.v1.worker.gpu.spec_decode.eagle import utils as eagle_utils
from vllm.platforms import current_platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.registry import AttentionBackendEnum

# _should_share compares a draft's own LM head with the target's by torch.equal, which has no
# meta kernel; tensors of different shapes are never equal (EAGLE-3's 32,000-row head beside
# the target's 128,256), which is the only comparison these cases make
_equal = torch.equal


def _meta_equal(a, b):
    if a.is_meta or b.is_meta:
        if a.shape != b.shape:
            return False
        raise NotImplementedError("torch.equal of meta tensors of one shape")
    return _equal(a, b)


torch.equal = _meta_equal
SUBSTITUTIONS = ["torch.equal: False for meta tensors of different shapes (what it answers "
                 "for any tensors of different shapes); refused for equal shapes"]
FP8 = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
       "weight_block_size": [128, 128]}
WRITTEN = HERE / "drafts"                       # the configs this tool writes (once)

# openPangu's config class (the checkpoints' remote code), registered on import
_pc = importlib.util.spec_from_file_location("pangu_config", HERE / "openpangu/pangu_config.py")
pangu_config = importlib.util.module_from_spec(_pc)
_pc.loader.exec_module(pangu_config)
SUBSTITUTIONS.append(pangu_config.SUBSTITUTION)


def _written(name, cfg):
    d = WRITTEN / name
    if not (d / "config.json").exists():
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return d


def _eagle(case):
    method = "eagle" if case.endswith("-eagle") else "eagle3"
    d = DATA / "eagle_draft" / case
    return d / "target", method, d / "draft"


def _fp8_target():
    """Llama-3.1-8B as an fp8 block checkpoint, beside the plain EAGLE-3 draft of case 1."""
    cfg = json.loads((DATA / "eagle_draft/1-llama31-8b-eagle3/target/config.json").read_text())
    return _written("llama31-8b-fp8", dict(cfg, quantization_config=FP8))


def _fp8_draft(ignored):
    """EAGLE-3 draft of case 1 as an fp8 block checkpoint, `ignored` its ignore list."""
    cfg = json.loads((DATA / "eagle_draft/1-llama31-8b-eagle3/draft/config.json").read_text())
    tag = "all" if not ignored else "skip"
    return _written(f"eagle3-8b-fp8-{tag}",
                    dict(cfg, quantization_config=dict(FP8, ignored_layers=ignored)))


def _mtp_fp8(case, ignored=None):
    """An MTP target of ../mtp_draft/ as an fp8 block checkpoint (its ignore list naming the
    MTP module's linears by the checkpoint's names)."""
    cfg = json.loads((DATA / "mtp_draft" / case / "target/config.json").read_text())
    q = dict(FP8, **({"ignored_layers": ignored} if ignored else {}))
    return _written(f"{case}-fp8" + ("-skip" if ignored else ""),
                    dict(cfg, quantization_config=q))


def _mtp_int(name):
    """The tiny DeepSeek-V3 of ./int_quant/ (its MTP layer kept, num_nextn_predict_layers 1),
    an AWQ / GPTQ checkpoint: built as an H100 builds it (record_int_quant.py's platform)."""
    spec = importlib.util.spec_from_file_location("record_int_quant",
                                                  HERE / "int_quant/record_int_quant.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    SUBSTITUTIONS.extend(s for s in mod.SUBSTITUTIONS[len(rc.SUBSTITUTIONS):]
                         if s not in SUBSTITUTIONS)
    cfg = json.loads((HERE / "int_quant" / f"{name}.config.json").read_text())
    return _written(name, cfg)


EAGLE = ["1-llama31-8b-eagle3", "2-llama31-8b-eagle", "3-llama31-70b-eagle3",
         "4-llama31-8b-eagle3-2layers", "5-llama31-8b-eagle3-kv4-hd64"]
MTP = ["1-deepseek-v3", "2-tiny-deepseek-v3", "3-qwen3-next-80b-a3b", "4-tiny-qwen3-next",
       "6-tiny-glm4-moe", "7-glm-4.5-air", "9-tiny-qwen3-5", "10-tiny-qwen3-5-moe",
       "13-qwen3-5-text-defaults", "14-qwen3-5-moe-text-defaults",
       "18-tiny-deepseek-v3-no-nextn-key"]
# name -> (the target's folder, method, the draft's folder or None for MTP); the folders are
# made only when a case is recorded
CASES = {**{f"eagle_draft/{c}": (lambda c=c: _eagle(c)) for c in EAGLE},
         **{f"mtp_draft/{c}": (lambda c=c: (DATA / "mtp_draft" / c / "target", "mtp", None))
            for c in MTP},
         "drafts/llama31-8b-fp8 + eagle3": lambda: (
             _fp8_target(), "eagle3", DATA / "eagle_draft/1-llama31-8b-eagle3/draft"),
         "drafts/eagle3-8b-fp8-all": lambda: (
             DATA / "eagle_draft/1-llama31-8b-eagle3/target", "eagle3", _fp8_draft([])),
         "drafts/eagle3-8b-fp8-skip": lambda: (
             DATA / "eagle_draft/1-llama31-8b-eagle3/target", "eagle3",
             _fp8_draft(["lm_head", "fc", "midlayer.self_attn.o_proj",
                         "model.layers.0.mlp.down_proj"])),
         "drafts/7-glm-4.5-air-fp8": lambda: (_mtp_fp8("7-glm-4.5-air"), "mtp", None),
         "drafts/7-glm-4.5-air-fp8-skip": lambda: (_mtp_fp8("7-glm-4.5-air", [
             "model.layers.46.eh_proj", "model.layers.46.self_attn.o_proj",
             "model.layers.46.mlp.shared_experts.down_proj",
             "model.layers.45.self_attn.o_proj"]), "mtp", None),
         "drafts/3-qwen3-next-80b-a3b-fp8": lambda: (
             _mtp_fp8("3-qwen3-next-80b-a3b"), "mtp", None),
         "drafts/3-qwen3-next-80b-a3b-fp8-skip": lambda: (_mtp_fp8("3-qwen3-next-80b-a3b", [
             "mtp.fc", "mtp.layers.0.self_attn.o_proj", "mtp.layers.0.mlp.shared_expert.down_proj",
             "model.layers.47.self_attn.o_proj"]), "mtp", None),
         **{f"drafts/{c}": (lambda c=c: (_mtp_int(c), "mtp", None))
            for c in ("deepseek-v3-awq", "deepseek-v3-gptq", "deepseek-v3-ct-w4a16")},
         # (GLM-4.7-Flash's Glm4MoeLiteMTP: its published shapes, ../mla/glm-4.7-flash)
         "drafts/glm-4.7-flash": lambda: (_written("glm-4.7-flash", json.loads(
             (DATA / "mla" / "glm-4.7-flash.config.json").read_text())), "mtp", None),
         # (LongCat-Flash's LongCatFlashMTP and openPangu's OpenPanguMTP: the targets of
         # ./longcat/ and ./openpangu/, written here as model folders)
         **{f"drafts/{c}": (lambda c=c: (_written(c, json.loads(
             (HERE / "longcat" / f"{c}.config.json")
             .read_text())), "mtp", None))
            for c in ("longcat-flash-l2", "longcat-flash-other")},
         # (LongCat-Flash as an fp8 block checkpoint: its module built with the quant_config)
         "drafts/longcat-flash-l2-fp8": lambda: (_written("longcat-flash-l2-fp8", json.loads(
             (HERE / "longcat_fp8" / "longcat-flash-l2-fp8.config.json").read_text())), "mtp",
             None),
         **{f"drafts/{c}": (lambda c=c: (_written(c, json.loads(
             (HERE / "openpangu" / f"{c}.config.json").read_text())), "mtp", None))
            for c in ("tiny-pangu-ultra-moe", "tiny-pangu-ultra-moe-no-q-lora")},
         "drafts/13-qwen3-5-text-defaults-fp8": lambda: (
             _mtp_fp8("13-qwen3-5-text-defaults"), "mtp", None),
         "drafts/13-qwen3-5-text-defaults-fp8-skip": lambda: (
             _mtp_fp8("13-qwen3-5-text-defaults", [
                 "mtp.fc", "mtp.layers.0.self_attn.o_proj", "mtp.layers.0.mlp.down_proj",
                 "model.language_model.layers.3.self_attn.o_proj"]), "mtp", None)}
TPS = (1, 2, 4, 8)
# every rank (`--all-ranks`), or the first and the last: the census found no rank of a TP
# size holding other bytes than rank 0, and a full-size fp8 target takes 6-10 s a build here
RANKS = (range if "--all-ranks" in sys.argv else lambda tp: sorted({0, tp - 1}))


def checkpoint_names(method, n_layers):
    """The names an EAGLE draft's load_weights hands process_eagle_weight for a published
    checkpoint: `lm_head` kept as written, the rest under ``model.``."""
    if method == "mtp":
        return []
    layers = ["midlayer."] if method == "eagle3" and n_layers == 1 else [
        f"layers.{i}." for i in range(n_layers)]
    names = [f"{p}{m}.weight" for p in layers for m in (
        "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "post_attention_layernorm")
        + (("input_layernorm", "hidden_norm") if method == "eagle3" else ())]
    names += ["fc.weight"] + (["norm.weight", "lm_head.weight", "d2t"]
                              if method == "eagle3" else [])
    return [n if "lm_head" in n else "model." + n for n in names]


def load_draft(model, vc, method):
    """The V2 runner's load_eagle_model, real, with the checkpoint's names passed to
    process_eagle_weight right after the draft is built (what its load_weights does)."""
    real = eagle_utils.get_model

    def built(**kw):
        m = real(**kw)
        for n in checkpoint_names(method, m.config.num_hidden_layers):
            process_eagle_weight(m, n)
        return m

    eagle_utils.get_model = built
    try:
        with set_current_vllm_config(vc):
            return eagle_utils.load_eagle_model(model, vc)
    finally:
        eagle_utils.get_model = real


def build(target, method, draft, tp, rank):
    rc.set_tp(tp, rank)
    mc = ModelConfig(model=str(target), skip_tokenizer_init=True, seed=0, max_model_len=4096)
    pc = ParallelConfig()
    sc = SpeculativeConfig(method=method, model=None if draft is None else str(draft),
                           num_speculative_tokens=1, target_model_config=mc,
                           target_parallel_config=pc)
    vc = VllmConfig(model_config=mc, parallel_config=pc, speculative_config=sc,
                    cache_config=CacheConfig(), device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    mla = bool(getattr(mc.hf_text_config, "kv_lora_rank", None))
    backend = AttentionBackendEnum.TRITON_MLA if mla else AttentionBackendEnum.FLASH_ATTN
    current_platform.get_attn_backend_cls = lambda *a, **k: backend.get_path()
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        model = initialize_model(vc)
    model_ids = {id(t) for t in list(model.parameters()) + list(model.buffers())}
    drafted = load_draft(model, vc, method)
    own = [p for p in drafted.parameters() if id(p) not in model_ids]
    bufs = {}
    for name, b in drafted.named_buffers():
        if id(b) in model_ids:
            continue
        owner, _, leaf = name.rpartition(".")
        mod = drafted.get_submodule(owner) if owner else drafted
        key = "persistent" if leaf not in mod._non_persistent_buffers_set else "non_persistent"
        bufs.setdefault(key, []).append(b)
    rec = {"param_numel": sum(p.numel() for p in own),
           "param_bytes_by_dtype": rc.by_dtype(own),
           "buffer_bytes_by_dtype": {k: rc.by_dtype(v) for k, v in sorted(bufs.items())}}
    if rank == 0:
        rec["class"] = type(drafted).__name__
        rec["draft_quantization"] = sc.draft_model_config.quantization
        rec["has_own"] = {f: getattr(drafted, f, None)
                          for f in ("has_own_embed_tokens", "has_own_lm_head")}
        names = {}
        for n, p in drafted.named_parameters():
            if id(p) not in model_ids:
                names[n] = [list(p.shape), rdm.dt(p.dtype)]
        rec["params_by_name"] = names
    return rec


def record(name):
    target, method, draft = CASES[name]()
    out = {"method": method, "target": str(Path(target).relative_to(DATA)),
           "draft": None if draft is None else str(Path(draft).relative_to(DATA)), "tp": {}}
    for tp in TPS:
        ranks = []
        for rank in RANKS(tp):
            t0 = time.perf_counter()
            try:
                ranks.append(build(target, method, draft, tp, rank))
            except Exception as e:       # vLLM's own refusal
                ranks.append({"refused": f"{type(e).__name__}: {e}"[:400],
                              "traceback_tail": traceback.format_exc().splitlines()[-4:]})
            print(name, f"TP {tp} rank {rank}", "refused" if "refused" in ranks[-1] else "ok",
                  f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            if "refused" in ranks[-1]:
                break
        out["tp"][str(tp)] = ranks
    rc.set_tp(1, 0)
    return out


def main():
    rqn.rmm_main_env()
    path = HERE / "drafts_answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": vllm.__version__, "torch": torch.__version__, "cases": {}})
    answers["substitutions"] = sorted(set(rc.SUBSTITUTIONS + rdm.SUBSTITUTIONS)) + SUBSTITUTIONS
    for name in [a for a in sys.argv[1:] if a != "--all-ranks"] or list(CASES):
        answers["cases"][name] = record(name)
        answers["substitutions"] = sorted(set(rc.SUBSTITUTIONS + rdm.SUBSTITUTIONS)) + SUBSTITUTIONS
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
