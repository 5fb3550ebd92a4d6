# ruff: noqa
"""Write this folder's configs: ../quant_towers/'s tiny LLaVA (CLIP), tiny Mistral 3 and
Qwen2.5-VL-7B AWQ / GPTQ / compressed-tensors W4A16 / ModelOpt FP8 configs, and
../fp8/'s tiny Gemma 3 with the same AWQ and W4A16 settings, each with a list leaving layer 1's
``mlp.down_proj`` unquantised, named as a checkpoint after transformers 4.52 writes it
(``-hf``: ``model.language_model.layers.1``), as vLLM names the module (``-vllm``:
``language_model.model.layers.1``) or bare (``-bare``: ``model.layers.1``). The lists: AWQ's
``modules_to_not_convert``, GPTQ's ``dynamic`` (a ``-:`` rule, the name's dots escaped),
compressed-tensors' and ModelOpt's ``ignore``. A development tool."""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOWERS = HERE.parent / "quant_towers"
HEADS = {"hf": "model.language_model.layers.1.", "vllm": "language_model.model.layers.1.",
         "bare": "model.layers.1."}
MODULE = "mlp.down_proj"
# Gemma 3's tower is left out whole, as its published AWQ checkpoints do, but in the
# ``-tower-packed`` configs (its SigLIP takes the quant_config in gemma3_mm.py)
GEMMA_TOWER = ["vision_tower", "multi_modal_projector"]


def listed(quant, name):
    q = dict(quant)
    method = q["quant_method"]
    if method == "awq":
        q["modules_to_not_convert"] = list(q.get("modules_to_not_convert") or []) + [name]
    elif method == "gptq":
        q["dynamic"] = {"-:" + name.replace(".", "\\."): {}}
    else:   # compressed-tensors, modelopt
        q["ignore"] = list(q.get("ignore") or []) + [name]
    return q


def base(name):
    if name.startswith("gemma-3-mm-"):
        cfg = json.loads((HERE.parent / "fp8" / "gemma-3-mm-fp8.config.json").read_text())
        method = name.removeprefix("gemma-3-mm-").removesuffix("-tower-packed")
        q = json.loads((TOWERS / f"tiny-llava-clip-{method}.config.json").read_text())
        cfg["quantization_config"] = q["quantization_config"]
        if name.endswith("-tower-packed"):
            pass
        elif method == "awq":
            cfg["quantization_config"]["modules_to_not_convert"] = list(GEMMA_TOWER)
        else:
            cfg["quantization_config"]["ignore"] += ["re:.*vision_tower.*",
                                                     "re:.*multi_modal_projector.*"]
        return cfg
    return json.loads((TOWERS / f"{name}.config.json").read_text())


# (Qwen2.5-VL's tower left out, as ../quant_towers/ does: vLLM cannot pack its 3,420-wide
# down_proj in groups of 128)
BASES = [f"{m}-{q}" for m in ("tiny-llava-clip", "tiny-mistral3")
         for q in ("awq", "gptq", "ct-w4a16")] + [
    "qwen2.5-vl-7b-awq-skip-tower", "qwen2.5-vl-7b-gptq", "qwen2.5-vl-7b-ct-w4a16-ignore-tower",
    "tiny-llava-clip-modelopt-fp8", "tiny-mistral3-modelopt-fp8",
    "gemma-3-mm-awq", "gemma-3-mm-ct-w4a16", "gemma-3-mm-awq-tower-packed",
    "gemma-3-mm-gptq-tower-packed", "gemma-3-mm-ct-w4a16-tower-packed"]


def only(quant, name):
    """The list naming the one module quantised: GPTQ's ``modules_in_block_to_quantize``,
    compressed-tensors' group ``targets``."""
    q = json.loads(json.dumps(quant))
    if q["quant_method"] == "gptq":
        q["modules_in_block_to_quantize"] = [name]
    else:
        for group in q["config_groups"].values():
            group["targets"] = [name]
    return q


# (the lists that name what is quantised, spelt the three ways: `-only-mlp-<spelling>`)
ONLY_BASES = [f"{m}-{q}" for m in ("tiny-llava-clip", "tiny-mistral3") for q in ("gptq", "ct-w4a16")
              ] + ["qwen2.5-vl-7b-gptq", "qwen2.5-vl-7b-ct-w4a16-ignore-tower",
                   "gemma-3-mm-gptq-tower-packed", "gemma-3-mm-ct-w4a16-tower-packed"]
if __name__ == "__main__":
    for b in BASES:
        for spelling, head in HEADS.items():
            cfg = base(b)
            cfg["quantization_config"] = listed(cfg["quantization_config"], head + MODULE)
            out = HERE / f"{b}-skip-mlp-{spelling}.config.json"
            out.write_text(json.dumps(cfg, indent=1) + "\n")
    for b in ONLY_BASES:
        for spelling, head in HEADS.items():
            cfg = base(b)
            cfg["quantization_config"] = only(cfg["quantization_config"], head + MODULE)
            out = HERE / f"{b}-only-mlp-{spelling}.config.json"
            out.write_text(json.dumps(cfg, indent=1) + "\n")
