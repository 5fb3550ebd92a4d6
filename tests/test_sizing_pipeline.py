"""Pipeline parallelism in the KV cache planning (`kvcore.sizing.pipeline`), against vLLM 0.33's
own planner: its layer split (`get_pp_indices`), each worker's projected groups, bytes per
block and block count, and the pool (the smallest), for dense, GQA, MLA, sliding-window,
MoE, Jamba, Falcon-H1 and Nemotron-H models, with drafts on the last stage (EAGLE-3, the MTP
modules of DeepSeek-V3, Qwen3-Next and Qwen3.5) and K speculative Mamba blocks (n-gram)
(tests/data/sizing_pp/answers.json, recorded by its `record_pp_answers.py` from kvcli's layer
specs and weights estimates; a Mamba case with K, from vLLM's own Mamba page too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models import load_preset
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.pipeline import pp_partition, stage_ranges
from kvcore.sizing.resolve import resolve_kv_cache_config
from kvcore.specs import MambaSpec

ROOT = Path(__file__).resolve().parents[1]
CASES = json.loads((ROOT / "tests/data/sizing_pp/answers.json").read_text())["cases"]


def sized(case: dict):
    src = case["source"]
    where = ({"model_config": str(ROOT / src)} if src.endswith(".json") else {"model": src})
    draft = case.get("draft")       # (a draft's layers and weights: the last stage's)
    if draft is not None:
        model, method = draft
        where |= {"draft": (str(ROOT / model) if model and model.endswith(".json") else model,
                            method)}
    # (K: every stage's Mamba blocks and conv rows; the first draft cases are K 1)
    where |= {"num_speculative_tokens": case.get("num_speculative_tokens", int(bool(draft)))}
    return resolve_kv_cache_config(**where, gpu_memory_gib=case["gpu_memory_gib"],
                                   tensor_parallel_size=case["tp"],
                                   pipeline_parallel_size=case["pp"],
                                   max_model_len=case["max_model_len"],
                                   block_size=case["block_size"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_each_stage_and_the_pool_are_vllms(case):
    res = sized(case)
    want = case["expected"]
    assert [[s.layers.start, s.layers.stop] for s in res.stages] == want["split"]
    assert [s.weights_bytes for s in res.stages] == case["weights"]
    assert [s.buffers_bytes for s in res.stages] == case["buffers"]
    assert [[len(g.layer_names) for g in s.groups] for s in res.stages] == want["kv_layers"]
    assert [s.bytes_per_block for s in res.stages] == want["bytes_per_block"]
    assert [s.num_blocks for s in res.stages] == want["worker_blocks"]
    assert {res.config.num_blocks} == set(want["num_blocks"])
    # the stage that sets the pool (the first of the fewest blocks: stage 0 to 3 in the cases),
    # as `kvcli config` names it; rank 0's groups are the first stage's, the CPU tier's chunk
    fewest = want["worker_blocks"].index(min(want["worker_blocks"]))
    assert res.pool_stage == fewest
    assert [len(g.layer_names) for g in res.rank0_groups] == want["kv_layers"][0]


SPEC_MAMBA = [c for c in CASES if "mamba" in c["expected"]]


@pytest.mark.parametrize("case", SPEC_MAMBA, ids=[c["name"] for c in SPEC_MAMBA])
def test_the_mamba_page_with_k_is_vllms(case):
    """vLLM's own hybrid block size, padded page and state with K (its `VllmConfig` at the
    case's TP, PP and speculative config): one for every stage, the draft's layers included."""
    res = sized(case)
    want = case["expected"]["mamba"]
    for st in res.stages:
        for g in st.groups:
            s = g.kv_cache_spec
            if isinstance(s, MambaSpec):
                assert (s.block_size, s.page_size_padded, s.num_speculative_blocks) == (
                    want["mamba_block_size"], want["page_size_padded"],
                    want["num_speculative_blocks"])
                assert [list(x) for x in s.shapes] == want["shapes"]
                assert list(s.dtypes) == want["dtypes"]
            else:
                assert s.block_size == want["block_size"]


def test_the_new_cases_are_all_there():
    # (K 1 and 3 give Qwen3-Next one page: its conv rows fit the padding; Nemotron's K 3
    # raises the block to 1,328 tokens, 1,312 at K 0 and 2)
    assert [(c["name"], c["expected"]["mamba"]["block_size"]) for c in SPEC_MAMBA] == [
        ("qwen3-next-80b-a3b-tp4-pp2-mtp-k1", 320), ("qwen3-next-80b-a3b-tp4-pp2-mtp-k3", 320),
        ("qwen3-next-80b-a3b-tp2-pp3-mtp-k1", 576), ("qwen3-next-80b-a3b-tp2-pp3-mtp-k3", 576),
        ("qwen3-5-text-defaults-tp1-pp2-mtp-k1", 320),
        ("qwen3-5-text-defaults-tp1-pp2-mtp-k2", 320),
        ("nemotron-nano-9b-v2-tp1-pp2-ngram-k2", 1312),
        ("nemotron-nano-9b-v2-tp1-pp3-ngram-k3", 1328),
        ("jamba-v0.1-tp2-pp3-ngram-k2", 80), ("jamba-v0.1-tp2-pp2-ngram-k4", 80),
        ("falcon-h1-7b-tp1-pp3-ngram-k2", 1584)]


def test_the_split_gives_the_remainder_to_the_stages_before_the_last():
    # vLLM's get_pp_indices: 80 layers in 3 stages are 27, 27, 26; 62 in 4 are 15, 16, 16, 15
    # (a remainder of at most pp - 2 goes to the middle stages)
    assert pp_partition(80, 3) == [27, 27, 26]
    assert pp_partition(62, 4) == [15, 16, 16, 15]
    assert pp_partition(7, 7) == [1] * 7
    assert stage_ranges(10, 4) == [range(2), range(2, 5), range(5, 8), range(8, 10)]


def test_the_first_stage_holds_the_embedding_and_the_last_the_head():
    g = load_preset("llama-3.1-8b")       # untied: embedding and head 128,256 x 4,096 each
    whole = estimate_weights_bytes(g)
    first, last = (estimate_weights_bytes(g, 1, (range(16), True, False)),
                   estimate_weights_bytes(g, 1, (range(16, 32), False, True)))
    assert first + last == whole
    assert last - first == 4096 * 2        # the final norm, the same 16 layers otherwise


def test_more_stages_than_layers_is_refused():
    with pytest.raises(InputError, match="32 decoder layers, fewer than 33 stages"):
        resolve_kv_cache_config("llama-3.1-8b", gpu_memory_gib=80, pipeline_parallel_size=33)


def test_kvcli_config_shows_each_stage():
    res = CliRunner().invoke(app, ["config", "llama-3.1-70b", "--gpu-memory-gib",
                                   "80", "--tp", "4", "-pp", "2", "--max-model-len", "8192",
                                   "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    case = next(c for c in CASES if c["name"] == "llama-3.1-70b-tp4-pp2")
    assert doc["pipeline_parallel_size"] == 2
    assert doc["num_blocks"] == case["expected"]["num_blocks"][0] == 93619
    assert [s["num_blocks"] for s in doc["stages"]] == case["expected"]["worker_blocks"]
    assert [s["layers"] for s in doc["stages"]] == [[0, 39], [40, 79]]


def test_kvcli_config_puts_the_mtp_module_on_the_last_stage():
    """Qwen3-Next at TP 4 PP 2 with its MTP module: vLLM's 51,645 blocks (the last stage: 25
    attention layers' pages of 320 tokens, the module's among them, and its weights)."""
    args = ["config", "qwen3-next-80b-a3b", "--gpu-memory-gib", "141", "--tp", "4", "--pp",
            "2", "--max-model-len", "32768", "--json"]
    case = next(c for c in CASES if c["name"] == "qwen3-next-80b-a3b-tp4-pp2-mtp-k3")
    res = CliRunner().invoke(app, [*args, "--spec-method", "mtp", "--spec-tokens", "3"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["num_blocks"] == case["expected"]["num_blocks"][0] == 51645
    assert [s["num_blocks"] for s in doc["stages"]] == case["expected"]["worker_blocks"]
    assert [s["bytes_per_block"] for s in doc["stages"]] == [1966080, 2293760]
    plain = CliRunner().invoke(app, args)
    assert plain.exit_code == 0, plain.output
    assert json.loads(plain.stdout)["num_blocks"] == 60673
