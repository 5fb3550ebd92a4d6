"""The quantised checkpoints of the pre-Llama decoders and DBRX whose weights kvcli does not
size: it refuses their estimate and asks for the measured size (``--weights-gib``) rather
than count them wrong. Found by tests/data/weights_census/families/, where vLLM 0.33 builds
each of these and kvcli's count differs:

- the pre-Llama decoders (`kvcore.models.classic_blocks`) under methods other than fp8, AWQ,
  GPTQ, compressed-tensors and ModelOpt (those sized: their linears at vLLM's paths, its own files'
  and the Transformers backend's, `kvcore.models.classic_paths`; tests/data/weights_census/
  families/, family_lists/, quant_old/), as are LFM2's, LFM2-MoE's and DBRX's lists under
  every method (`kvcore.models.fp8_ignored.linear_path`: short_conv, feed_forward.w13 / w2,
  transformer.blocks.N.norm_attn_norm.attn.Wqkv, ...);
- DBRX under compressed-tensors (its experts, DbrxExperts, are not matched as kvcli matches
  a Mixtral's).
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry


def why(g: ModelGeometry) -> str:
    """Why kvcli does not estimate the checkpoint's weights ("": it sizes them)."""
    m = g.quantization
    if m is None:
        return ""
    if g.classic is not None:
        # (every list matched at vLLM's paths: `kvcore.models.classic_paths`)
        if not (m == "fp8" or g.int_quant is not None or g.modelopt is not None):
            return f"{g.model_type}'s weights in a quantised ({m}) checkpoint"
    elif g.model_type == "dbrx" and m == "compressed-tensors":
        return f"{g.model_type}'s weights in a quantised ({m}) checkpoint"
    return ""
