"""`kvcli.lean_typer`: plain option values converted without pydantic give exactly what typer's
own pydantic adapters give, and everything else still goes to typer (same errors)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
import typer.core
from typer._adapters import try_build_adapter
from typer._click.exceptions import BadParameter
from typer.models import OptionInfo
from typer.testing import CliRunner

from kvcli.app import app
from kvcli.commands.replay import EventsFormat
from kvcli.lean_typer import _MISS, FAST, _converter

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

VALUES = ["0", "12", "-3", "+4", "007", "1_000", "0.5", "-2.5e3", ".5", "5.", "1e3", "abc", "",
          " 3", "3 ", "nan", "inf", "0x10", "１２", 12, 0, -1, 0.5, 2.0, True, False, None]


@pytest.mark.parametrize("kind", [str, int, float, bool])
@pytest.mark.parametrize("value", VALUES)
def test_fast_conversion_equals_typers_adapter(kind, value):
    got = FAST[kind](value)
    if got is _MISS:
        return      # typer's own adapter decides (and words any error)
    want = try_build_adapter(kind, OptionInfo()).validate_python(value)
    assert got == want and type(got) is type(want), (kind, value, got, want)


class _Descriptor:
    """What `_converter` reads of typer's parameter descriptor."""

    def __init__(self, annotation, info):
        self.annotation = annotation
        self.parameter_info = info
        self.file_annotation = None


def _typers(annotation, info, value):
    try:
        return ("ok", try_build_adapter(annotation, info).validate_python(value))
    except (ValueError, BadParameter) as exc:      # its refusal, worded by typer
        return ("error", type(exc).__name__)


def _ours(annotation, info, value):
    convert = _converter(_Descriptor(annotation, info))
    assert convert is not None
    try:
        got = convert(value, None, None)
    except (ValueError, BadParameter) as exc:
        return ("error", type(exc).__name__)
    return None if got is _MISS else ("ok", got)


@pytest.mark.parametrize("case_sensitive", [True, False])
@pytest.mark.parametrize("value", ["jsonl", "vllm", "VLLM", "Vllm", " vllm", "", "bogus",
                                   EventsFormat.vllm, "EventsFormat.vllm", 3, None])
def test_choices_convert_as_typers_adapter(value, case_sensitive):
    info = OptionInfo(case_sensitive=case_sensitive)
    ours = _ours(EventsFormat, info, value)
    if ours is None:
        return      # typer's own adapter decides (and words any error)
    assert ours == _typers(EventsFormat, info, value)
    assert type(ours[1]) is EventsFormat


@pytest.mark.parametrize("info", [OptionInfo(), OptionInfo(resolve_path=True),
                                  OptionInfo(exists=True), OptionInfo(dir_okay=False),
                                  OptionInfo(allow_dash=True)],
                         ids=["plain", "resolve", "exists", "file-only", "dash"])
@pytest.mark.parametrize("value", ["x.jsonl", "", "-", " ", "~/x", "/", ".", b"x", 3,
                                   Path("y")])
def test_paths_convert_as_typers_adapter(tmp_path, monkeypatch, value, info):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.jsonl").write_text("")
    ours = _ours(Path, info, value)
    if ours is None:
        return
    assert ours == _typers(Path, info, value)
    if ours[0] == "ok":
        assert type(ours[1]) is type(_typers(Path, info, value)[1])


def test_bad_choices_and_paths_keep_typers_message(tmp_path):
    res = CliRunner().invoke(app, ["replay", "t.jsonl", "--events-format", "xml"])
    text = " ".join(res.output.replace("│", " ").split())
    assert res.exit_code == 2 and "Value error, 'xml' is not one of 'jsonl', 'vllm'." in text


def test_fast_path_takes_the_common_forms():
    assert FAST[int]("12") == 12 and FAST[int]("-3") == -3 and FAST[float]("0.5") == 0.5
    assert FAST[float]("1e3") == 1000.0 and FAST[str]("x") == "x" and FAST[bool](True) is True
    assert FAST[int]("007") is _MISS and FAST[int]("1_000") is _MISS and FAST[float](1) is _MISS


def test_bad_values_keep_typers_message():
    res = CliRunner().invoke(app, ["curve", "t.jsonl", "--jobs", "abc"])
    assert res.exit_code == 2 and "Input should be a valid integer" in res.output
    res = CliRunner().invoke(app, ["curve", "t.jsonl", "--warmup", "x"])
    assert res.exit_code == 2 and "Input should be a valid number" in res.output


@pytest.mark.parametrize("argv", [
    ["curve", "missing.jsonl", "--rule", "trace", "--warmup", "0.5", "--block-size", "512",
     "--json"],
    # choice and path options too (`--events-format`, `--steps`)
    ["replay", "missing.jsonl", "--events-format", "vllm", "--steps", "s.jsonl", "--arrivals",
     "step", "--json"],
], ids=["curve", "replay"])
def test_a_command_does_not_import_pydantic(tmp_path, argv):
    code = ("import sys; from kvcli.app import app\n"
            f"try:\n    app({argv!r}, standalone_mode=False)\n"
            "except Exception:\n    pass\n"
            "print('pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True,
                         env={**os.environ, "PYTHONPATH": str(PYPROJECT.parent)}).stdout
    assert out.strip() == "False"


def test_the_patch_applies_on_the_pinned_typer():
    """pyproject pins the typer minor whose internals `install()` reads; on it the patch must
    be in place (else every command silently pays for pydantic again)."""
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    (pin,) = [d for d in deps if re.match(r"typer\b", d)]
    lo, hi = re.fullmatch(r"typer>=(\d+\.\d+),<(\d+\.\d+)", pin.replace(" ", "")).groups()
    installed = tuple(int(x) for x in version("typer").split(".")[:2])
    assert tuple(map(int, lo.split("."))) <= installed < tuple(map(int, hi.split("."))), (
        f"typer {version('typer')} is outside the pin {pin!r}")
    assert getattr(typer.core.build_runtime_param, "_kvcli_lean", False), (
        f"kvcli.lean_typer.install() did not apply on typer {version('typer')}: its internals "
        "changed; update lean_typer (and the pin) or drop it")
