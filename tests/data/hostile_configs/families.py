# ruff: noqa
"""The valid configs mutate_configs.py and sweep_configs.py start from, by family and campaign.

SET7 is the seventh campaign's (the pre-Llama decoders, LFM2, Mamba, Nemotron-H, Gemma 3n / 4,
ModelOpt, GPTQ / compressed-tensors rules); SET8 the eighth's (the multimodal towers, sparse
MLA, Zamba2, Llama 4 MoE, K2-Horizon, LongCat-Flash, class-default experts, the pre-Llama /
LFM2 / DBRX module lists, quantised towers and routers); SET9 the ninth's (InternVL's remote-code
checkpoints and kin, MiniCPM-V / Idefics3 / Phi-3-vision / Phi-4-multimodal with LongRoPE, the
omni thinkers, DeepSeek-VL2, the quantised InternVL-family towers, tie_word_embeddings on a
wrapper or its text config, LongCat-Flash, openPangu, K2-Horizon, class-default experts, sparse
MLA and GLM-4.7-Flash with draw_options.py's cache dtype, block size and MTP); SET10 the
tenth's (ERNIE-4.5 MoE / -VL, Keye, Molmo, Nemotron Nano VL V2's RADIO, Step-3 / Step-3.5,
GLM-4V's EVA, MiniCPM-o, Voxtral, Intern-S1-Pro's FoPE, LLaVA-NeXT-Video, the quantised
StarCoder / GPT-NeoX / Phi-2, DeepSeek-VL2 and ERNIE / Keye towers, Cohere's tie, the
multimodal dtype cases and mm_startup's, with draw_options.py's ERNIE / Step-3.5 MTP drafts and
--max-num-batched-tokens); SET11 the eleventh's (the towers of Command A Vision, Aria, BLIP-2,
LightOnOCR, Granite 4 Vision, Ovis / Ovis2.5 / 2.6, Eagle 2.5, OpenCUA, Kanana-V, the speech
models, the OCR models and GLM-OCR's MTP target, the quantised ERNIE-VL / Step3 / Step-3.5 /
Voxtral / Molmo, Step3 and Step-3.5 on pipeline stages, the several-module MTP targets, with
draw_options.py's --pipeline-parallel-size and MTP drafts at K 1..6). To point a
campaign at a new family, add a line to SET9 (family -> [(folder under tests/data, glob)]) or
set `KVMUT_FAMILIES=NAME=FOLDER/GLOB[,...]` for one run of mutate_configs.py; a family whose
configs are a JSON object of named configs rather than files is read by a loader in LOADERS
(an answers.json's cases holding a "config": `_cases`).
"""
import copy
import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1]
WC = "weights_census/"

SET8 = {
    "qwen_vl": [("qwen_vl", "*.config.json"), (WC + "quant2", "qwen2*-vl-*.config.json")],
    "llava_towers": [(WC + "llava_towers", "*.config.json")],
    "glm_kimi_towers": [(WC + "glm_kimi_towers", "*.config.json")],
    "gemma_lfm2_towers": [("weights_gemma_mm", "configs.json")],
    "fp8_towers": [(WC + "fp8", "*-vl-*.config.json"), (WC + "fp8", "gemma-3-mm-*.config.json"),
                   (WC + "fp8", "qwen3-vl-*.config.json")],
    "quant_routers": [(WC + "quant2", "qwen3-*moe-*.config.json")],
    "sparse_mla": [("sparse_mla", "*.config.json"), (WC + "quant2", "deepseek-v3.2-*.config.json"),
                   (WC + "quant2", "glm-5-*.config.json")],
    "zamba2": [("zamba2", "*.config.json")],
    "llama4_moe": [(WC + "llama4_moe", "*.config.json")],
    "glm4_moe_lite": [("mla", "glm-4.7-flash.config.json")],
    "k2_horizon": [(WC + "k2_horizon", "*.config.json")],
    "longcat": [(WC + "longcat", "*.config.json")],
    "class_defaults": [(WC + "class_defaults", "*.config.json")],
    "module_lists": [(WC + "family_lists", "*.config.json")],
}

INTERNVL_Q = ("tiny-h2ovl-q-", "tiny-interns1-", "tiny-internvl-", "tiny-nvlm-d-q-",
              "tiny-skywork-q-")
SET9 = {
    "internvl_chat": [(WC + "internvl_chat", "*.config.json")],
    "minicpm_idefics_phi": [(WC + "mm_minicpm_idefics_phi", "*.config.json")],
    "omni": [(WC + "mm_omni", "*.config.json")],
    "deepseek_vl2": [(WC + "mm_omni/deepseek_vl2", "*.config.json")],
    "quant_towers_internvl": [(WC + "quant_towers", p + "*.config.json") for p in INTERNVL_Q],
    "quant_towers": [(WC + "quant_towers", p + "*.config.json")
                     for p in ("glm-", "mistral-", "paligemma-", "qwen", "tiny-llava-",
                               "tiny-mistral3-")],
    "quant2": [(WC + "quant2", "*.config.json")],
    "mm_tie": [(WC + "mm_tie", "answers.json")],
    "longcat": [(WC + "longcat", "*.config.json")],
    "openpangu": [(WC + "openpangu", "*.config.json")],
    "k2_horizon": [(WC + "k2_horizon", "*.config.json")],
    "class_defaults": [(WC + "class_defaults", "*.config.json")],
    "sparse_mla": [("sparse_mla", "*.config.json")],
    "glm4_moe_lite": [("mla", "glm-4.7-flash.config.json")],
}

SET10 = {
    "ernie_keye": [(WC + "mm_ernie", "*.config.json")],
    "nemo_molmo": [(WC + "mm_nemo", "*.config.json")],
    "step3_glm4v": [(WC + "mm_step3", "*.config.json")],
    "step3p5": [(WC + "mm_step3/step3p5", "*.config.json")],
    "audio_fope": [(WC + "mm_audio", "*.config.json")],
    "quant_old": [(WC + "quant_old", "*.config.json")],
    "quant_dsvl2": [(WC + "quant_dsvl2", "*.config.json")],
    "quant_ernie_keye": [(WC + "quant_ernie_keye", "*.config.json")],
    "cohere_tie": [(WC + "cohere_tie", "*.config.json")],
    "mm_dtype": [(WC + "mm_dtype", "*.config.json")],
    "mm_startup": [("mm_startup", "answers.json")],
}


def _step3_pp():
    """step3_pp's cases: quant_step3's tiny configs unquantised, Step3's with its text config's
    tie_word_embeddings written (as its record_step3_pp.py builds them)."""
    out = []
    for name, base, tie in (("tiny-step3", "tiny-step3-fp8", None),
                            ("tiny-step3-text", "tiny-step3-text-fp8", None),
                            ("tiny-step3p5", "tiny-step3p5-fp8", None),
                            ("tiny-step3-tie-false", "tiny-step3-fp8", False),
                            ("tiny-step3-text-tie-true", "tiny-step3-text-fp8", True)):
        cfg = json.loads((DATA / WC / "quant_step3" / f"{base}.config.json").read_text())
        cfg.pop("quantization_config")
        if tie is not None:
            (cfg.get("text_config") or cfg)["tie_word_embeddings"] = tie
        out.append((name, cfg))
    return out


def _mtpmulti2():
    """mtpmulti2's several-module MTP targets, as its configs.py writes them."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("mtpmulti2_configs",
                                                  DATA / WC / "mtpmulti2" / "configs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [(case, mod.config(case)) for case in sorted(mod.CASES)]


SET11 = {
    "cohere_aria_blip2": [(WC + "mm_cohere", "*.config.json")],
    "ovis_eagle_kanana": [(WC + "mm_ovis", "*.config.json")],
    "audio2": [(WC + "mm_audio2", "*.config.json")],
    "ocr": [(WC + "mm_ocr", "*.config.json")],
    "ocr_mtp": [(WC + "mm_ocr/mtp", "*/config.json")],
    "quant_ernie_keye": [(WC + "quant_ernie_keye", "tiny-ernie-*.config.json")],
    "quant_step3": [(WC + "quant_step3", "*.config.json")],
    "step3_pp": [_step3_pp],
    "quant_voxtral_molmo": [(WC + "quant_voxtral", "*.config.json"),
                            (WC + "quant_molmo", "*.config.json")],
    "mtpmulti2": [_mtpmulti2],
}
# (the families whose configs are MTP targets: draw_options gives them a draft more often)
MTP_FAMILIES = ("ocr_mtp", "mtpmulti2", "quant_step3", "step3_pp")


def _gemma_mm(path):
    """weights_gemma_mm/configs.json's specs, each made a config.json as its record_towers.py
    does (its "text" a file, an inline config or a sched_gemma/planning.json case)."""
    plan = json.loads((DATA / "sched_gemma" / "planning.json").read_text())
    out = []
    for name, spec in sorted(json.loads(path.read_text())["configs"].items()):
        t = spec["text"]
        text = (json.loads((DATA / t["file"]).read_text()) if "file" in t else t["inline"]
                if "inline" in t else {k: v for k, v in plan[t["from"]]["config"].items()
                                       if k != "architectures"})
        out.append((name, {**{k: v for k, v in spec.items() if k != "text"},
                           "text_config": text}))
    return out


def _cases(path):
    """An answers.json's cases that hold a config (mm_tie's: a wrapper and its text config
    with tie_word_embeddings true, false or absent on each)."""
    cases = json.loads(path.read_text())["cases"]
    if isinstance(cases, list):
        # (mm_startup's: a list of cases named by their "case")
        cases = {c.get("case", str(i)): c for i, c in enumerate(cases)}
    return [(name, case["config"]) for name, case in sorted(cases.items())
            if isinstance(case, dict) and isinstance(case.get("config"), dict)]


LOADERS = {"configs.json": _gemma_mm, "answers.json": _cases}


def _files(folder, pattern="*.config.json"):
    return sorted((DATA / folder).glob(pattern))


def from_table(table):
    """(family, name, config, None) for each file a table's (folder, glob) pairs name."""
    out = []
    for family, places in table.items():
        for place in places:
            if callable(place):         # (a family built by a loader of its own)
                out.extend((family, name, cfg, None) for name, cfg in place())
                continue
            for p in _files(*place):
                loader = LOADERS.get(p.name)
                # (mm_ocr/mtp's configs are NAME/config.json)
                label = p.parent.name + "/" + p.name if p.name == "config.json" else p.name
                named = loader(p) if loader else [(label, json.loads(p.read_text()))]
                out.extend((family, name, cfg, None) for name, cfg in named)
    return out


def set7():
    """(family, name, config, hf_quant_config or None): the seventh campaign's seeds."""
    out = []
    for p in _files("gpt_family"):
        out.append(("classic", p.name, json.loads(p.read_text()), None))
    for folder in ("lfm2", "mamba_only"):
        for p in _files(folder):
            out.append((folder, p.name, json.loads(p.read_text()), None))
    for name in ("nemotron-nano-9b-v2", "granite-4.0-h-tiny-style", "falcon-h1-7b"):
        p = DATA / "mamba" / f"{name}.config.json"
        out.append(("nemotron_h" if "nemotron" in name else "hybrid", p.name,
                    json.loads(p.read_text()), None))
    for name in ("gemma3n_small", "gemma4_small"):
        out.append(("gemma", name, json.loads((DATA / "sched_gemma" / f"{name}.json").read_text()),
                    None))
    for name, case in json.loads((DATA / "weights_gemma" / "answers.json").read_text())[
            "cases"].items():
        if isinstance(case, dict) and isinstance(case.get("config"), dict):
            out.append(("gemma", name, case["config"], None))
    for p in _files(WC + "modelopt"):
        beside = p.with_name(p.name.replace(".config.json", ".hf_quant_config.json"))
        quant = json.loads(beside.read_text()) if beside.exists() else None
        out.append(("modelopt", p.name, json.loads(p.read_text()), quant))
    for folder, family in ((WC + "quant_rules", "rules"), (WC + "kv_scheme", "kv_scheme")):
        for p in _files(folder):
            out.append((family, p.name, json.loads(p.read_text()), None))
    from kvcore.models.presets import PRESETS
    for name, (_, cfg) in PRESETS.items():
        out.append(("preset", name, copy.deepcopy(cfg), None))
    return out


def seeds(which="7", extra=""):
    """The seeds of campaign `which` ("7", "8", "9" or "7,8"), plus `extra`'s
    NAME=FOLDER/GLOB."""
    out = []
    if "7" in which.split(","):
        out += set7()
    if "8" in which.split(","):
        out += from_table(SET8)
    if "9" in which.split(","):
        out += from_table(SET9)
    if "10" in which.split(","):
        out += from_table(SET10)
    if "11" in which.split(","):
        out += from_table(SET11)
    table = {}
    for item in filter(None, extra.split(",")):
        name, _, place = item.partition("=")
        folder, _, pattern = place.rpartition("/")
        table.setdefault(name, []).append((folder, pattern))
    return out + from_table(table)
