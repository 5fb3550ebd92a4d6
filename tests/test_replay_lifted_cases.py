"""`replay --model-config` of the classes ../refused_lifted lifted = vLLM 0.33's schedulers over
the groups vLLM planned for them, step for step with their KV events.

tests/data/sched_lifted (its README): traces over the groups in answers.json of
tests/data/refused_lifted for tiny Sarvam MLA (one MLA group), LongCat-Flash with n-gram
embeddings (one MLA group), RNJ-1 (a sliding group of its chunked layers, a full group) and
Domyn Edge (six groups of one layer: windows 64, 64, full, full, 128, 64 at blocks 32, 32, 16,
16, 32, 16), each sync and async, answered by the real Scheduler and AsyncScheduler; and
openPangu V2's sink attention, which vLLM 0.33 fails to start (a SinkFullAttentionManager
TypeError), which kvcli refuses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, check_model_case, config_of, replay_case, without_groups
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data"
CASES = sorted((DATA / "sched_lifted").glob("*.trace.jsonl"))
MODELS = {"sarvam": "tiny-sarvam-mla", "longcat": "tiny-longcat-ngram", "rnj1": "tiny-rnj1",
          "domyn": "tiny-domyn-edge", "pangu": "tiny-pangu-v2-sink"}


def model_of(trace: Path) -> Path:
    return DATA / "refused_lifted" / f"{MODELS[trace.name.split('_')[0]]}.config.json"


def test_the_cases_cover_each_class_sync_and_async():
    names = {t.name[:-12] for t in CASES}
    assert len(names) == 24
    assert {n.split("_")[0] for n in names} == set(MODELS)
    assert sum(config_of(t)["async_scheduling"] for t in CASES) == 13


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_lifted_case(trace: Path, tmp_path: Path):
    cfg = config_of(trace)
    error = answer_of(trace)[-1].get("error")
    if trace.name.startswith("pangu"):
        # vLLM plans the sink group but its coordinator hands SinkFullAttentionManager a
        # keyword it does not take: the engine fails to start, every trace alike
        assert error == ("TypeError: SinkFullAttentionManager.__init__() got an unexpected "
                         "keyword argument 'needs_kv_cache_zeroing'")
        with pytest.raises(InputError, match="needs_kv_cache_zeroing") as e:
            replay_case(without_groups(trace, tmp_path),
                        async_scheduling=cfg["async_scheduling"],
                        model_config=str(model_of(trace)))
        assert e.value.field == "model_config"
        return
    check_model_case(trace, model_of(trace), tmp_path)


@pytest.mark.parametrize("argv", [
    ["replay", "TRACE"], ["replay", "TRACE", "--mode", "cache", "--num-blocks", "64"],
    ["script", "OPS"]], ids=["engine", "cache", "script"])
def test_sink_attention_is_refused_in_one_line(argv: list[str], tmp_path: Path):
    """Each run of the KV cache manager: exit 2, one line naming the option, no traceback."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"id": "r0", "prompt_token_ids": [1, 2, 3], "output_length": 2}\n')
    ops = tmp_path / "ops.jsonl"
    ops.write_text('{"config": {"block_size": 16, "num_blocks": 40}}\n'
                   '{"op": "new", "id": "r0", "prompt": [1, 2, 3]}\n')
    path = {"TRACE": str(trace), "OPS": str(ops)}
    r = CliRunner().invoke(app, [path.get(a, a) for a in argv] + [
        "--model-config", str(DATA / "refused_lifted" / "tiny-pangu-v2-sink.config.json")])
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and "Traceback" not in r.output
    assert "option --model-config" in r.output and "needs_kv_cache_zeroing" in r.output


def test_kvcli_config_still_sizes_it_and_warns():
    """vLLM plans the pool (43,690 blocks at 1 GiB, ../refused_lifted) before it fails to build
    the manager: `kvcli config` answers, and says that vLLM will not start."""
    import json

    r = CliRunner().invoke(app, ["config", "--model-config", str(
        DATA / "refused_lifted" / "tiny-pangu-v2-sink.config.json"), "--gpu-memory-gib", "1",
        "--json"])
    assert r.exit_code == 0, r.output
    warnings = json.loads(r.stdout)["warnings"]
    assert [w for w in warnings if "vLLM then fails to start" in w] == [(
        "pangu_pro_moe_v2: sized as vLLM 0.33 plans it, but vLLM then fails to start, its "
        "SinkFullAttentionManager cannot be built (TypeError: unexpected keyword argument "
        "'needs_kv_cache_zeroing') (kvcli replay refuses it)")]
