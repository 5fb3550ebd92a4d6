"""The quantised checkpoints of the pre-Llama decoders and DBRX whose weights kvcli does not
size: it refuses their estimate and asks for the measured size (``--weights-gib``) rather
than count them wrong. Found by tests/data/weights_census/families/, where vLLM 0.33 builds
each of these and kvcli's count differs:

- the pre-Llama decoders (`kvcore.models.classic_blocks`) under any method but fp8, ChatGLM's
  AWQ, GPTQ and compressed-tensors aside (its layers are shaped as kvcli's Llama count: equal)
  unless a list there (AWQ's ``modules_to_not_convert``, GPTQ's ``dynamic`` rules,
  compressed-tensors' ``ignore`` and targets, ModelOpt's ``ignore``) names modules beyond
  ``lm_head``. Their fp8 lists are matched at vLLM's paths, its own files' and the
  Transformers backend's for GPT-NeoX, Phi and GPTBigCode (`kvcore.models.classic_paths`), as
  are LFM2's, LFM2-MoE's and DBRX's lists under every method (`kvcore.models.fp8_ignored.
  linear_path`: short_conv, feed_forward.w13 / w2, transformer.blocks.N.norm_attn_norm.attn.
  Wqkv, ...; tests/data/weights_census/family_lists/);
- DBRX under compressed-tensors (its experts, DbrxExperts, are not matched as kvcli matches
  a Mixtral's).
"""

from __future__ import annotations

from kvcore.models.classic_paths import PATHS
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
        # (an fp8 list matched at vLLM's own files' paths: `kvcore.models.classic_paths`)
        sized = (m == "fp8" or g.int_quant is not None or g.modelopt is not None) and (
            not listed or g.model_type in PATHS)
        if not sized:
            return f"{g.model_type}'s weights in a quantised ({m}) checkpoint"
    elif g.model_type == "dbrx" and m == "compressed-tensors":
        return f"{g.model_type}'s weights in a quantised ({m}) checkpoint"
    return ""
