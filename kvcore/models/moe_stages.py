"""The classes vLLM 0.33 cannot build on a pipeline stage holding none of their MoE layers: as
the model is built it takes the expert counts from one of the stage's own MoE blocks (for
expert parallelism's bookkeeping), and raises where the stage has none: a stage of dense
layers only (the first ``first_k_dense_replace`` layers, Sarvam's ``moe_layer_freq`` gaps)
or of too few layers. Recorded at PP 4: tests/data/refused_lifted/pp (vLLM raised it on every
such stage; Step-3.5's own assertion is `kvcore.models.step3`'s).
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry

# architecture -> vLLM's error, word for word
NO_MOE_STAGE = {
    # sarvam.py, SarvamMixtureOfExperts.extract_moe_parameters
    "SarvamMLAForCausalLM": "RuntimeError: No SarvamMLAMoE layer found in model.layers.",
    # openpangu.py, OpenPanguMoEModel.__init__
    "PanguProMoEV2ForCausalLM": "RuntimeError: No MOE layer found in model.layers.",
}


def moe_stage_refusal(g: ModelGeometry, ranges: list[range]) -> str | None:
    """vLLM's error where one of the stages `ranges` holds no MoE layer of a class that needs
    one (None: every stage builds)."""
    why = NO_MOE_STAGE.get(g.architecture)
    if why is None or len(ranges) < 2:
        return None
    moe = g.moe_layers
    return why if any(not any(moe[i] for i in r) for r in ranges) else None
