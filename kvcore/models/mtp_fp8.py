"""An fp8 target's MTP module as vLLM 0.33 builds it: the ignore-list names that reach its
linears, and whether its fold is quantised.

Method mtp takes the target's quantization (config/speculative.py: "Align the quantization of
draft model"), and the module's linears get the target's quant_config under the module's own
prefix: DeepSeek-V3's and GLM-4.5's decoder layer at ``model.layers.N`` (N the target's
``num_hidden_layers``: the checkpoint's index; deepseek_mtp.py, glm4_moe_mtp.py), Qwen3-Next's
and Qwen3.5's at ``mtp.layers.0`` (qwen3_next_mtp.py, qwen3_5_mtp.py). An ``ignored_layers``
entry reaches the module only under that prefix; the entries naming the target's layers do not.
kvcli sizes the module as one layer of a geometry, which it names ``model.layers.K`` (the
target's last layer for DeepSeek and GLM, 0 for Qwen): the module's entries are renamed to that
name and the others left out. The fold of (embedding, hidden state): Qwen3-Next's and Qwen3.5's
``fc`` is a ColumnParallelLinear built with the quant_config (fp8, with block scales, unless
``mtp.fc`` is listed; under a ModelOpt target as its linears, matched at ``mtp.fc``, but never
under NVFP4, whose class forces it unquantised: qwen3_next_mtp.py, qwen3_5_mtp.py); DeepSeek's
and GLM's ``eh_proj`` a plain nn.Linear, never quantised.
Checked against vLLM: tests/data/weights_census/drafts_answers.json, modelopt/drafts_answers.json.
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry
from kvcore.models.modelopt_quant import ModelOpt
from kvcore.models.modelopt_rank import quantised

QWEN_PREFIX = "mtp.layers.0"
QWEN_FOLD = "mtp.fc"


def module_prefix(target: ModelGeometry, qwen: bool) -> str:
    """Where vLLM builds the MTP module's decoder layer."""
    return QWEN_PREFIX if qwen else f"model.layers.{target.num_layers}"


def draft_ignored(target: ModelGeometry, prefix: str, index: int) -> tuple[str, ...]:
    """The target's ignore list as it reaches the module built at `prefix`, named as kvcli's
    one-layer geometry names its layer `index`."""
    head = prefix + "."
    return tuple(f"model.layers.{index}." + x[len(head):]
                 for x in target.fp8_ignored if x.startswith(head))


def qwen_ignored(target: ModelGeometry) -> tuple[str, ...]:
    """The target's ignore list as it reaches Qwen's modules, ``mtp.layers.i`` each, named as
    kvcli's geometry of them names its layer i (``model.layers.i``)."""
    return tuple("model." + x[len("mtp."):] for x in target.fp8_ignored
                 if x.startswith(QWEN_PREFIX[:-1]))


def fp8_fold(target: ModelGeometry) -> bool:
    """Whether vLLM builds Qwen's ``fc`` in fp8."""
    return target.quantization == "fp8" and QWEN_FOLD not in target.fp8_ignored


def modelopt_fold(g: ModelGeometry) -> ModelOpt | None:
    """How vLLM quantises Qwen's ``fc`` beside a ModelOpt target (`g`: the module's geometry;
    None: it does not): excluded, not in a mixed-precision table, or modelopt_fp4."""
    if g.modelopt is None or g.modelopt.method == "modelopt_fp4":
        return None
    return quantised(g, g.modelopt, QWEN_FOLD)
