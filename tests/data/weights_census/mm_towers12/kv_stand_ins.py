"""The KV-spec census's (../../kv_spec_census/record_kv_specs.py) Pixtral and
Phi-4-reasoning-vision cases, imported by it: their census configs are this folder's tiny ones
(`TINY`). vLLM builds PixtralForConditionalGeneration from a Mistral-format params.json only:
its build folder holds the params.json written back from the config (`write_config`), which
vLLM's config_format 'auto' reads as a Mistral checkpoint's (`is_mistral_model_repo` answering
for it: a published one has consolidated*.safetensors). A development tool, never run by the
tests."""
# ruff: noqa
import json
from pathlib import Path

import census_configs
from vllm.transformers_utils import config as _config

HERE = Path(__file__).resolve().parent
ARCH = "PixtralForConditionalGeneration"
# HF key -> Mistral key (the inverse of adapt_config_dict's renames)
_BACK = {"hidden_size": "dim", "rms_norm_eps": "norm_eps", "num_key_value_heads": "n_kv_heads",
         "num_hidden_layers": "n_layers", "num_attention_heads": "n_heads",
         "intermediate_size": "hidden_dim", "tie_word_embeddings": "tied_embeddings"}
# (its own list, which record_kv_specs.py adds after census_configs.py's: appended to that
# one at import, it had aliased mm_ovis/ovis_config.py's list while census_configs.py's was it)
SUBSTITUTIONS = [
    f"{ARCH}: built from a params.json written back from the census's config (a Mistral-format "
    "folder); it and Phi4ForCausalLMV from ../weights_census/mm_towers12/'s tiny configs "
    "(kv_stand_ins.py)"]
_make = census_configs.make_config


# the classes whose census config is this folder's tiny one (Phi4ForCausalLMV: its checkpoint's
# config class is remote code; this folder's config is a Phi3Config with its keys)
TINY = {ARCH: "tiny-pixtral", "Phi4ForCausalLMV": "tiny-phi4-siglip"}


def make_config(arch, reverse):
    if arch in TINY:
        return json.loads((HERE / f"{TINY[arch]}.config.json").read_text()), None
    return _make(arch, reverse)


census_configs.make_config = make_config
_is_mistral = _config.is_mistral_model_repo
_config.is_mistral_model_repo = lambda model_name_or_path, **kw: (
    (Path(model_name_or_path) / "params.json").exists() or _is_mistral(model_name_or_path, **kw))


def write_config(tmp, cfg):
    """The config into the build folder `tmp`: a config.json, or Pixtral's params.json."""
    if cfg.get("architectures") != [ARCH]:
        (tmp / "config.json").write_text(json.dumps(cfg))
        return
    t = {k: v for k, v in cfg["text_config"].items() if k not in ("architectures", "model_type")}
    params = {_BACK.get(k, k): v for k, v in t.items()}
    (tmp / "params.json").write_text(json.dumps({**params, "vision_encoder": cfg["vision_config"]}))
