# ruff: noqa
"""What the OCR classes need to be built here, for ../../kv_spec_census/record_kv_specs.py (and
through it this folder's record_towers.py). A development tool, never run by the tests.

- dots.ocr's checkpoints bring their config class as remote code: vLLM's own rewrite of it
  (`DotsOCRConfig`, vllm/transformers_utils/configs/dotsocr.py, the class dots_ocr.py reads)
  is registered with AutoConfig for model_type ``dots_ocr``.
- DeepSeek-OCR's and DeepSeek-OCR-2's classes look their ``<image>`` token up in the tokenizer
  as they are built (deepseek_ocr.py, deepseek_ocr2.py); no tokenizer files here: the stand-in
  DeepSeek-VL2's gets (`stand_in`, an int; no tensor).
"""

SUBSTITUTIONS = [
    "DeepSeek-OCR, DeepSeek-OCR-2: the same stand-in",
    "dots.ocr: vLLM's own DotsOCRConfig (configs/dotsocr.py) registered with AutoConfig for "
    "model_type dots_ocr, in place of the checkpoint's remote code",
]


def register(stand_in):
    """Registers dots.ocr's config class and gives DeepSeek-OCR's classes `stand_in` as their
    `cached_tokenizer_from_config`."""
    from transformers import AutoConfig
    from vllm.model_executor.models import deepseek_ocr, deepseek_ocr2
    from vllm.transformers_utils.configs.dotsocr import DotsOCRConfig

    AutoConfig.register("dots_ocr", DotsOCRConfig, exist_ok=True)
    for module in (deepseek_ocr, deepseek_ocr2):
        module.cached_tokenizer_from_config = stand_in
