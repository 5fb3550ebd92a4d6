"""vLLM 0.33's multimodal serving options (`--limit-mm-per-prompt`, `--language-model-only`,
`--mm-encoder-tp-mode`) in `kvcli config` and `kvcli replay`: the vision tower vLLM builds under
them (bytes per rank: tests/test_weights_census.py against vLLM's own builds), the blocks that
then fit, vLLM's spellings (JSON, its dotted keys) and the refusals, one line each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcli.dotted_options import join_dotted
from kvcore.errors import InputError
from kvcore.mm_options import mm_options, parse_limits

ROOT = Path(__file__).resolve().parents[1]
QWEN = str(ROOT / "tests/data/mtp_draft/15-qwen3-5-defaults/target/config.json")
TINY = str(ROOT / "tests/data/mtp_draft/11-tiny-qwen3-5-vl/target/config.json")
GEMMA = ["config", "gemma-3-27b", "--gpu-memory-gib", "80", "--json"]


def config(*args: str) -> tuple[dict, str]:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def refusal(*args: str) -> str:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.output, r.stderr
    return lines[0]


def test_vllms_forms_of_the_limits():
    assert parse_limits('{"image": 0}') == (("image", 0),)
    # (a count object with the modality's dummy sizes; {} is the default 999; true is 1, as
    # vLLM's pydantic reads it)
    assert parse_limits('{"image": {"count": 0, "width": 512}, "video": {}, "audio": true}') == (
        ("image", 0), ("video", 999), ("audio", 1))
    opts = mm_options('{"image": 0}', False, None)
    assert [opts.limit(m) for m in ("image", "video")] == [0, 999]
    assert mm_options(None, True, "data").limit("video") == 0


@pytest.mark.parametrize(("text", "says"), [
    ('{"image": -1}', "image: expected a count >= 0, got -1"),
    ('{"image": 1.0}', "image: expected a count or an object with 'count', got 1.0"),
    ('{"image": "0"}', "image: expected a count or an object with 'count', got '0'"),
    ('{"image": {"count": -1}}', "image: expected a count >= 0, got -1"),
    ('{"image": {"count": 0, "num_frames": 5}}', "image: unexpected key 'num_frames'"),
    ('{"video": {"width": 0}}', "video.width: expected an integer > 0, got 0"),
    ("[1]", "expected a JSON object like"),
    ("image=0", "(or the dotted --limit-mm-per-prompt.image 0), got 'image=0'"),
])
def test_what_vllm_refuses_is_refused(text, says):
    with pytest.raises(InputError) as e:
        parse_limits(text)
    assert says in e.value.message and e.value.field == "limit_mm_per_prompt"
    assert says in refusal(*GEMMA, "--limit-mm-per-prompt", text)


# vLLM's own warning first, as it plans Gemma 3 27B's groups (52 sliding layers in tens)
PADDING = "warning: Add 8 padding layers, may waste at most 15.38% KV cache memory\n"


def test_gemma_3_27b_without_its_tower_fits_645_more_blocks():
    base, _ = config(*GEMMA)
    assert base["num_blocks"] == 18_204
    assert base["multimodal"] == {
        "vision_tower": "built", "limits": {"image": 999}, "language_model_only": False,
        "mm_encoder_tp_mode": "weights", "vision_weights_bytes": 846_120_672,
        "vision_weights_gib": 846_120_672 / 2**30}
    # the SigLIP tower and the projector: 423,060,336 parameters in bf16, not built
    for extra in (["--limit-mm-per-prompt", '{"image": 0}'],
                  ["--limit-mm-per-prompt", '{"image": {"count": 0}}'],
                  ["--limit-mm-per-prompt", '{"image": 0, "video": 0}'],
                  ["--language-model-only"]):
        doc, err = config(*GEMMA, *extra)
        assert doc["num_blocks"] == 18_849, extra
        assert doc["multimodal"]["vision_tower"] == "skipped"
        assert doc["multimodal"]["vision_weights_bytes"] == 0
        assert round(base["memory"]["weights_gib"] - doc["memory"]["weights_gib"], 9) == round(
            846_120_672 / 2**30, 9)
        # (Gemma 3 takes images only: a video limit is read by nothing, and said)
        assert err == PADDING + ("" if "video" not in extra[-1] else "warning: option "
                                 "--limit-mm-per-prompt: video: no effect, gemma-3-27b takes "
                                 "image only (vLLM reads no other limit)\n")
    assert config(*GEMMA, "--language-model-only")[0]["multimodal"]["limits"] == {"image": 0}


def test_what_changes_nothing_is_said():
    doc, err = config(*GEMMA, "--limit-mm-per-prompt", '{"video": 0}')
    assert doc["num_blocks"] == 18_204
    assert err == PADDING + ("warning: option --limit-mm-per-prompt: video: no effect, "
                             "gemma-3-27b takes image only (vLLM reads no other limit)\n")
    doc, err = config(*GEMMA, "--mm-encoder-tp-mode", "data")
    assert (doc["num_blocks"], doc["multimodal"]["mm_encoder_tp_mode"]) == (18_204, "weights")
    assert "does not support it; vLLM falls back to weights" in err
    doc, err = config("config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--json",
                      "--language-model-only", "--limit-mm-per-prompt", '{"image": 0}')
    assert (doc["num_blocks"], doc["multimodal"]) == (30_008, None)
    assert err.count("which has no vision tower kvcli counts") == 2
    assert "option --language-model-only: no effect on llama-3.1-8b" in err


def test_qwen3_5_at_tp_2():
    """Qwen3.5's class defaults: the tower is the image and video tower (an image limit of 0
    alone keeps it); data holds it whole on both ranks (vLLM's 9,861,378,784 B a rank)."""
    def blocks(*extra: str) -> tuple[int, dict]:
        doc, _ = config("config", "--model-config", QWEN, "--tp", "2", "--gpu-memory-gib",
                        "80", "--json", *extra)
        return doc["num_blocks"], doc["multimodal"]

    assert blocks()[0] == blocks("--limit-mm-per-prompt", '{"image": 0}')[0] == 13_277
    assert blocks("--limit-mm-per-prompt", '{"image": 0, "video": 0}')[0] == 13_364
    n, mm = blocks("--mm-encoder-tp-mode", "data")
    assert (n, mm["mm_encoder_tp_mode"], mm["vision_weights_bytes"]) == (
        13_191, "data", 907_301_344)
    assert blocks()[1]["vision_weights_bytes"] == 458_268_016


def test_data_mode_lifts_the_vision_heads_refusal_and_a_skipped_tower_does_not():
    """vLLM constructs a skipped tower on the meta device (its 2 heads still split over TP 4);
    data splits none (tests/data/weights_census: built at TP 4)."""
    args = ("config", "--model-config", TINY, "--tp", "4", "--gpu-memory-gib", "80")
    line = refusal(*args)
    assert line.endswith("vision tower has 2 attention heads, which must be divisible by it, "
                         "as vLLM requires; got 4 (--mm-encoder-tp-mode data holds it whole on "
                         "every rank)")
    assert "vision tower has 2 attention heads" in refusal(*args, "--language-model-only")
    doc, _ = config(*args, "--json", "--mm-encoder-tp-mode", "data")
    assert doc["multimodal"]["vision_weights_bytes"] == 93_152 * 2


def test_vllms_dotted_keys():
    assert join_dotted(["config", "x", "--limit-mm-per-prompt.image", "0", "--tp", "2"]) == [
        "config", "x", "--tp", "2", "--limit-mm-per-prompt", '{"image": 0}']
    # merged, a human-readable integer read as vLLM reads it, and given after the rest: it
    # replaces a JSON value given too, as in vLLM
    assert join_dotted(["--limit-mm-per-prompt", '{"video": 0}', "--limit_mm_per_prompt.image=0",
                        "--limit-mm-per-prompt.video.count=1k"]) == [
        "--limit-mm-per-prompt", '{"video": 0}',
        "--limit-mm-per-prompt", '{"image": 0, "video": {"count": 1000}}']
    # (what it cannot read is left to click, which names it)
    assert join_dotted(["--limit-mm-per-prompt.image"]) == ["--limit-mm-per-prompt.image"]
    assert join_dotted(["--", "--limit-mm-per-prompt.image=0"]) == [
        "--", "--limit-mm-per-prompt.image=0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "kvcli", *GEMMA, "--limit-mm-per-prompt.image", "0"],
                       capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["num_blocks"] == 18_849


def test_the_replay_sizes_its_pool_the_same():
    trace = str(ROOT / "traces" / "shared-prefix.jsonl")
    base = ["replay", trace, "--model", "gemma-3-27b", "--gpu-memory-gib", "80", "--json"]
    assert config(*base)[0]["num_blocks"] == 18_204
    doc, _ = config(*base, "--limit-mm-per-prompt", '{"image": 0}')
    assert (doc["num_blocks"], doc["config"]["limit_mm_per_prompt"]) == (18_849, '{"image": 0}')
    doc, _ = config(*base, "--language-model-only")
    assert (doc["num_blocks"], doc["config"]["language_model_only"]) == (18_849, True)
    assert "mm_encoder_tp_mode" not in config(*base)[0]["config"]
    line = refusal(*base, "--limit-mm-per-prompt", '{"image": -1}')
    assert line == "error: option --limit-mm-per-prompt: image: expected a count >= 0, got -1"


def test_the_replay_says_what_changes_nothing():
    trace = str(ROOT / "traces" / "shared-prefix.jsonl")

    def warnings(*args: str) -> list[str]:
        doc, _ = config("replay", trace, "--json", *args)
        return [w for w in doc["warnings"] if "vision" in w or "pool unless" in w
                or "falls back" in w]

    assert warnings("--limit-mm-per-prompt", '{"image": 0}') == [(
        "option(s) limit_mm_per_prompt: no effect on the pool unless it is sized from a model's "
        "gpu_memory_gib (they change the model's weights)")]
    assert warnings("--model", "gemma-3-27b", "--gpu-memory-gib", "80",
                    "--mm-encoder-tp-mode", "data") == [(
        "option mm_encoder_tp_mode: data: gemma-3-27b's class does not support it; vLLM falls "
        "back to weights (the tower split over TP)")]
    assert warnings("--model", "gemma-3-27b", "--gpu-memory-gib", "80",
                    "--language-model-only") == []


def test_the_warnings_read_the_sizings_notes():
    # one path: the notes are those the sizing left in its MMState (`StartUp.mm`), not the
    # options applied to the geometry once more
    from kvcore.engine.options import ReplayOptions, resolve
    from kvcore.engine.start_warnings import start_warnings
    from kvcore.engine.startup import start_up
    from kvcore.models.mm_serving import MMState
    from kvcore.traces.reader import read_trace

    path = str(ROOT / "traces" / "shared-prefix.jsonl")
    trace = read_trace(path, keep=4)
    opts = ReplayOptions(model="gemma-3-27b", gpu_memory_gib=80, mm_encoder_tp_mode="data",
                         given=frozenset({"model", "gpu_memory_gib", "mm_encoder_tp_mode"}))
    start = start_up(trace, resolve(opts, trace.config, path=path))
    assert start.mm is not None and (start.mm.tower, start.mm.mode) == ("built", "weights")
    fallback = ("data: gemma-3-27b's class does not support it; vLLM falls back to weights (the "
                "tower split over TP)")
    assert start.mm.notes == (("mm_encoder_tp_mode", fallback),)

    def mm_lines(mm: MMState | None) -> list[str]:
        return [w for w in start_warnings(start.cfg, trace, start.geometry, start.groups, mm)
                if w.startswith(("option mm_", "option limit_mm"))]

    assert mm_lines(start.mm) == [f"option mm_encoder_tp_mode: {fallback}"]
    said = MMState("built", "weights", notes=(("limit_mm_per_prompt", "said by the sizing"),))
    assert mm_lines(said) == ["option limit_mm_per_prompt: said by the sizing"]
    assert mm_lines(None) == []
