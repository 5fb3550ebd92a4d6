"""The ``intermediate_size`` vLLM 0.33's perf.py reads where it is not the MLP's width.

perf.py's `BaseFfnConfigParser` takes ``getattr(text config, "intermediate_size", 4 * hidden)``
and, for the experts, the first of ``moe_intermediate_size`` / ``intermediate_size`` the config
object has (else 0). The attribute is not always the width vLLM's MLP is built at (found with
the oracle on tests/data/perf_families):

* The pre-Llama config classes have no such attribute (GPT-2's family ``n_inner``, OPT's
  ``ffn_dim``, Falcon's and ChatGLM's ``ffn_hidden_size``, DBRX's ``ffn_config``): perf.py bills
  4 x hidden_size, and 0 for DBRX's experts, unless the config.json itself names the key (a
  config class keeps an unknown key as an attribute).
* LFM2's is the config's value (``block_ff_dim`` first, as Lfm2Config pops it; class default
  12,288), before `Lfm2MLP` takes two thirds of it and rounds it up.
* Llama 4's is its experts' width (class default 8,192); its dense layers are built
  ``intermediate_size_mlp`` wide (Maverick's every second layer), which perf.py does not read.
"""

from __future__ import annotations

from typing import Any

NO_WIDTH_ATTRIBUTE = ("gpt2", "gptj", "gpt_bigcode", "bloom", "opt", "falcon", "RefinedWeb",
                      "RefinedWebModel", "dbrx", "chatglm")
LFM2_WIDTH_DEFAULT = 12288      # (transformers 5.20's Lfm2Config)
LLAMA4_WIDTH_DEFAULT = 8192     # (its Llama4TextConfig)


def perf_intermediate(raw: dict[str, Any], model_type: str) -> int | None:
    """The config object's ``intermediate_size`` where it is not the MLP's width (0: the object
    has none), from the text config as written; None: the MLP's width."""
    if model_type in NO_WIDTH_ATTRIBUTE:
        width = raw.get("intermediate_size")
    elif model_type == "lfm2":
        width = raw.get("block_ff_dim", raw.get("intermediate_size", LFM2_WIDTH_DEFAULT))
    elif model_type == "llama4_text":
        width = raw.get("intermediate_size", LLAMA4_WIDTH_DEFAULT)
    else:
        return None
    return width if isinstance(width, int) and not isinstance(width, bool) else 0
