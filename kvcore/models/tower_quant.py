"""The vision towers vLLM 0.33 builds with a quantised checkpoint's quant_config whose quantised
linears kvcli does not list: the LLaVA family's, Mistral 3's, PaliGemma's, InternVL's (Hugging
Face format) and GLM-4.1V's / GLM-4.5V's (each class passes its quant_config to its tower, and
LLaVA's, LLaVA-NeXT's and Mistral 3's to the projector's ``linear_1`` / ``linear_2``).

Sized where the checkpoint's list leaves every module under each prefix of `PREFIXES`
unquantised: the tower (and projector) then stay in the model dtype, as kvcli counts them,
beside the language model sized as its method sizes it. A list does so when one of its entries
reaches any path under the prefix as vLLM matches it: AWQ's ``modules_to_not_convert`` a
substring of the path (``vision_tower``), compressed-tensors' ``ignore`` a ``re:`` regex
re.match-ing it (RedHatAI's ``re:.*vision_tower.*`` and ``re:.*multi_modal_projector.*``).
Otherwise (fp8's exact ``ignored_layers``, GPTQ, a list naming some of the tower's modules) the
estimate is refused in one line asking for the measured size (`kvcore.models.quant_unsized`'s
pattern): counted in the model dtype it was an over-estimate (tiny LLaVA CLIP under fp8 at TP 1:
1,040,896 B more than vLLM's). A skipped tower (``--language-model-only``, limits of 0) is not
loaded: its linears do not matter. Census tests/data/weights_census/quant_towers/.
"""

from __future__ import annotations

import re

from kvcore.models.geometry import ModelGeometry

_LLAVA = ("vision_tower", "multi_modal_projector")
# (each class's module prefixes built with the quant_config; OneVision's, PaliGemma's and
# InternVL's projectors are plain nn.Linear or take no quant_config)
PREFIXES = {
    "LlavaForConditionalGeneration": _LLAVA,
    "LlavaNextForConditionalGeneration": _LLAVA,
    "Mistral3ForConditionalGeneration": _LLAVA,
    "LlavaOnevisionForConditionalGeneration": ("vision_tower",),
    "PaliGemmaForConditionalGeneration": ("vision_tower",),
    "InternVLForConditionalGeneration": ("vision_tower",),
    "Glm4vForConditionalGeneration": ("visual",),
    "Glm4vMoeForConditionalGeneration": ("visual",),
}
# (a path under a prefix that no list names on its own: only an entry reaching the whole
# prefix matches it)
_ANY = ".0.any_linear"


def _left_out(g: ModelGeometry, prefix: str) -> bool:
    """Whether the checkpoint's list leaves every linear under `prefix` unquantised."""
    q = g.int_quant
    path = prefix + _ANY
    if q is None:
        return False
    if q.family == "awq":
        return any(s in path for s in q.skips)
    if q.family == "ct":
        return any(x.startswith("re:") and re.match(x[3:], path) for x in q.ignore)
    return False


def covered(g: ModelGeometry) -> bool:
    """Whether this module decides the tower's count: a class of `PREFIXES` under a method
    kvcli sizes (fp8, AWQ / GPTQ / compressed-tensors)."""
    return g.architecture in PREFIXES and (g.quantization == "fp8" or g.int_quant is not None)


def why(g: ModelGeometry) -> str:
    """Why kvcli does not estimate the tower's weights ("": it sizes them)."""
    if not covered(g) or g.vision_params <= g.vision_kept:
        return ""
    if all(_left_out(g, p) for p in PREFIXES[g.architecture]):
        return ""
    names = " and ".join(f"{p}." for p in PREFIXES[g.architecture])
    return (f"{g.architecture}'s vision tower in a quantised ({g.quantization}) checkpoint "
            f"(vLLM quantises the linears under {names} unless the list leaves all of them "
            "out)")
