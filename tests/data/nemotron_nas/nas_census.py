# ruff: noqa
"""DeciLMForCausalLM for the KV-spec census (../kv_spec_census/census_configs.py imports it last):
this folder's stand-in config class (nas_config.py) registered with AutoConfig for model_type
nemotron-nas, and the census's config for the class this folder's tiny-nas-a (the census makes
its configs from a config class's defaults; the checkpoints bring theirs as remote code). A
development tool, never run by the tests."""
import json
from pathlib import Path

import census_configs
import nas_config

HERE = Path(__file__).resolve().parent
ARCH = "DeciLMForCausalLM"
nas_config.register()
# (short: the census's answers.json keeps each on one line)
# (a list of its own, which census_configs.py joins to its own after importing this module)
SUBSTITUTIONS = [f"{ARCH}: ../nemotron_nas/'s tiny-nas-a config and stand-in config class"]
_make = census_configs.make_config


def make_config(arch, reverse):
    if arch == ARCH:
        return json.loads((HERE / "tiny-nas-a.config.json").read_text()), None
    return _make(arch, reverse)


census_configs.make_config = make_config
