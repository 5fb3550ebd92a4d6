"""`kvcli.lean_typer`: plain option values converted without pydantic give exactly what typer's
own pydantic adapters give, and everything else still goes to typer (same errors)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
import typer.core
from typer._adapters import try_build_adapter
from typer.models import OptionInfo
from typer.testing import CliRunner

from kvcli.app import app
from kvcli.lean_typer import _MISS, FAST

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


def test_fast_path_takes_the_common_forms():
    assert FAST[int]("12") == 12 and FAST[int]("-3") == -3 and FAST[float]("0.5") == 0.5
    assert FAST[float]("1e3") == 1000.0 and FAST[str]("x") == "x" and FAST[bool](True) is True
    assert FAST[int]("007") is _MISS and FAST[int]("1_000") is _MISS and FAST[float](1) is _MISS


def test_bad_values_keep_typers_message():
    res = CliRunner().invoke(app, ["curve", "t.jsonl", "--jobs", "abc"])
    assert res.exit_code == 2 and "Input should be a valid integer" in res.output
    res = CliRunner().invoke(app, ["curve", "t.jsonl", "--warmup", "x"])
    assert res.exit_code == 2 and "Input should be a valid number" in res.output


def test_a_plain_command_does_not_import_pydantic(tmp_path):
    code = ("import sys; from kvcli.app import app\n"
            "try:\n    app(['curve', 'missing.jsonl', '--rule', 'trace', '--warmup', '0.5', "
            "'--block-size', '512', '--json'], standalone_mode=False)\n"
            "except Exception:\n    pass\n"
            "print('pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
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
