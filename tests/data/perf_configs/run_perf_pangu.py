# ruff: noqa
"""Run the oracle's perf.py (argv as `oracle perf` takes them) with a config class registered
for model_type pangu_ultra_moe (remote code: transformers 5.20 has none), the one
weights_census/openpangu/record_openpangu.py registers."""
import runpy, sys
from transformers import AutoConfig, PretrainedConfig


class PanguUltraMoEConfig(PretrainedConfig):
    model_type = "pangu_ultra_moe"

    def __init__(self, **kwargs):
        self.max_position_embeddings = kwargs.pop("max_position_embeddings", 4096)
        super().__init__(**kwargs)


AutoConfig.register("pangu_ultra_moe", PanguUltraMoEConfig, exist_ok=True)
sys.argv = [sys.argv[1]] + sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
