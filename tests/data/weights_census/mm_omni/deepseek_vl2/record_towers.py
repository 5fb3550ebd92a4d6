"""Record what vLLM 0.33 builds, rank by rank, for DeepSeek-VL2 (tiny, small, full; the configs
here): every ``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank (parameter
count, bytes by dtype, buffers; rank 0's parameters by name), and
each under the multimodal serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision\\
:/tmp/timm_pkg \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_omni/deepseek_vl2/record_towers.py [CASE ...]

It imports ../../tower_recorder.py, which executes ../../../kv_spec_census/record_kv_specs.py
for its substitutions (and through it ../../record_census.py's, whose `record` builds each
case); every one is listed in answers.json, with this file's own SUBSTITUTION.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import tower_recorder as tr                     # vLLM imported, every substitution applied
rks, rc = tr.rks, tr.rc

TPS = (1, 2, 4, 8)
# (option, value) pairs each base is recorded with beside its plain build: the tower dropped
# (--language-model-only, an image limit of 0) and the encoder's data-parallel mode (which the
# class does not declare: vLLM falls back)
LMO, DATA = tr.LMO, tr.DATA
OPTIONS = {"deepseek-vl2-tiny": (LMO, ("--limit-mm-per-prompt", {"image": 0}), DATA),
           "deepseek-vl2-small": (LMO,), "deepseek-vl2": (LMO,)}

# DeepseekVLV2ForCausalLM looks its image token's id up in the tokenizer as it is built
# (deepseek_vl2.py: `cached_tokenizer_from_config(model_config).vocab[_IMAGE_TOKEN]`); no
# tokenizer files here: a stand-in whose vocab holds that token. An int, no tensor.
import types
from vllm.model_executor.models import deepseek_vl2 as _dsvl2
_dsvl2.cached_tokenizer_from_config = lambda mc: types.SimpleNamespace(
    vocab={_dsvl2._IMAGE_TOKEN: 128815})
SUBSTITUTION = ("DeepSeek-VL2: cached_tokenizer_from_config a stand-in whose vocab holds "
                "<image> (the image token id only; no tensor)")


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS), [SUBSTITUTION])


if __name__ == "__main__":
    main()
