"""The classes vLLM 0.33 cannot build on a pipeline stage holding none of their MoE layers: as
the model is built it takes the expert counts from one of the stage's own MoE blocks (for
expert parallelism's bookkeeping), and raises where the stage has none: a stage of dense
layers only (the first ``first_k_dense_replace`` / ``num_dense_layers`` layers, the ones
``mlp_only_layers`` names or ``decoder_sparse_step`` skips, Sarvam's ``moe_layer_freq`` gaps)
or of no layer at all (more stages than layers: vLLM builds such a stage, and these classes
raise there first). The words are the whole model's (`kvcore.models.moe_required`: the same
code on a stage holding every layer) and a few classes' own. Recorded at PP 4 (openPangu
Ultra's at 3): tests/data/moe_stages, tests/data/refused_lifted/pp.

The classes that only log a warning and go on build such a stage (tests/data/moe_stages):
deepseek_v2.py (DeepSeek-V2/V3 and their kin), llama4.py, ernie45_moe.py, AXK1.py; and
bailing_moe.py (Sarvam MoE) and the Qwen3-Omni thinker take no example at all.
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry
from kvcore.models.moe_required import WORDS

# architecture -> vLLM's error, word for word (Step-3.5's assertion: `kvcore.models.step3`'s)
NO_MOE_STAGE = {arch: f"RuntimeError: {words}" for arch, words in WORDS.items()
                if arch != "Step3p5ForCausalLM"} | {
    # afmoe.py AfmoeForCausalLM.__init__: only where the config gives MoE layers at all (so
    # not the whole model's refusal)
    "AfmoeForCausalLM": "RuntimeError: No AfmoeMoE layer found in model.layers.",
    # openpangu.py OpenPanguMoEModel.__init__, as Pro V2's (a whole model without experts is
    # not refused: tests/data/registry_classes sizes one, unrecorded by vLLM)
    "PanguUltraMoEForCausalLM": "RuntimeError: No MOE layer found in model.layers.",
    # nemotron_h.py NemotronHForCausalLM.__init__: `assert example_moe is not None`, where the
    # pattern has an E but not on the stage (no words of its own)
    "NemotronHForCausalLM": "AssertionError: assert example_moe is not None",
}


def moe_stage_refusal(g: ModelGeometry, ranges: list[range]) -> str | None:
    """vLLM's error where one of the stages `ranges` holds no MoE layer of a class that needs
    one (None: every stage builds; a model with no MoE layer at all is the whole model's
    refusal, `kvcore.models.moe_required`, or builds: Afmoe's)."""
    why = NO_MOE_STAGE.get(g.architecture)
    moe = g.moe_layers
    if why is None or len(ranges) < 2 or not any(moe):
        return None
    return why if any(not any(moe[i] for i in r) for r in ranges) else None
