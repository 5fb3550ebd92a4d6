"""The quantised checkpoints of the pre-Llama decoders and DBRX whose weights kvcli does not
size: it refuses their estimate and asks for the measured size (``--weights-gib``) rather
than count them wrong. Found by tests/data/weights_census/families/, where vLLM 0.33 builds
each of these and kvcli's count differs:

- the pre-Llama decoders (`kvcore.models.classic_blocks`) under any method but fp8, ChatGLM's
  AWQ, GPTQ and compressed-tensors aside (its layers are shaped as kvcli's Llama count: equal);
- a list naming modules to leave unquantised (fp8's ``ignored_layers``, AWQ's
  ``modules_to_not_convert``, GPTQ's ``dynamic`` rules, compressed-tensors' ``ignore`` and
  class or path targets, ModelOpt's ``ignore``) beyond ``lm_head``, for these families: kvcli
  matches such lists against a Llama-shaped model's paths (``model.layers.N.self_attn.
  qkv_proj``), not against vLLM's (``transformer.h.N.attn.c_attn``,
  ``norm_attn_norm.attn.Wqkv``); LFM2's and LFM2-MoE's are matched at vLLM's paths
  (`kvcore.models.fp8_ignored.linear_path`: short_conv, feed_forward.w13 / w2) and sized;
- DBRX under compressed-tensors (its experts, DbrxExperts, are not matched as kvcli matches
  a Mixtral's).
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry

# (ChatGLM's QKV, dense, gated MLP: what kvcli's Llama count packs, checked equal)
_CLASSIC_INT = ("chatglm",)


def _lists(g: ModelGeometry) -> bool:
    """Whether the checkpoint names modules (beyond the LM head) to quantise differently."""
    q, mo = g.int_quant, g.modelopt
    names = (*g.fp8_ignored_written, *(q.skips + q.ignore + q.blocks if q else ()),
             *(mo.exclude if mo else ()))
    return any(n != "lm_head" for n in names) or bool(q and (q.rules or q.targets))


def why(g: ModelGeometry) -> str:
    """Why kvcli does not estimate the checkpoint's weights ("": it sizes them)."""
    m = g.quantization
    if m is None:
        return ""
    listed = _lists(g)
    if g.classic is not None:
        if listed or not (m == "fp8" or (g.model_type in _CLASSIC_INT and g.int_quant)):
            return f"{g.model_type}'s weights in a quantised ({m}) checkpoint"
    elif g.model_type == "dbrx" and (listed or m == "compressed-tensors"):
        return (f"{g.model_type}'s weights in a quantised ({m}) checkpoint"
                + (" with module lists or rules" if listed else ""))
    return ""
