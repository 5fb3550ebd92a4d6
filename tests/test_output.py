"""kvcli.output: atomic files (no half-written output, usual permissions) and exit codes."""

import os

import pytest
import typer

from kvcli import output
from kvcore.errors import InputError, NoDeviceError


def test_open_output_renames_when_complete_with_umask_mode(tmp_path):
    target = tmp_path / "out.jsonl"
    old = os.umask(0o022)
    try:
        with output.open_output(str(target)) as f:
            f.write(b"{}\n")
            assert not target.exists()  # only the temporary name exists while writing
    finally:
        os.umask(old)
    assert target.read_bytes() == b"{}\n"
    assert target.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_open_output_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out.jsonl"
    with pytest.raises(InputError), output.open_output(str(target)) as f:
        f.write(b"half")
        raise InputError("bad", path="t.jsonl", line=3, field="x")
    assert list(tmp_path.iterdir()) == []


def test_open_output_keeps_partial_output_on_interrupt_when_asked(tmp_path):
    target = tmp_path / "events.jsonl"
    with pytest.raises(KeyboardInterrupt), \
            output.open_output(str(target), keep_on_interrupt=True) as f:
        f.write(b'{"kind":"interrupted"}\n')
        raise KeyboardInterrupt
    assert target.read_bytes() == b'{"kind":"interrupted"}\n'


@pytest.mark.parametrize(
    "exc, code",
    [(InputError("bad", path="t.jsonl", line=3, field="x"), 2), (NoDeviceError("no CUDA"), 3),
     (KeyboardInterrupt(), 130)],
)
def test_run_maps_failures_to_exit_codes_and_one_line(exc, code, capsys):
    def fail():
        raise exc

    with pytest.raises(typer.Exit) as info:
        output.run(fail)
    assert info.value.exit_code == code
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    if code == 2:
        assert err.strip() == "error: t.jsonl:3: field 'x': bad"


def test_an_option_error_names_the_flag():
    assert output.describe(InputError("must be >= 2", field="num_blocks")) == (
        "option --num-blocks: must be >= 2")
    assert output.describe(InputError("bad", path="t.jsonl", field="num_blocks")) == (
        "t.jsonl: field 'num_blocks': bad")


def test_tables_draw_data_not_markup(capsys):
    # a trace's path, an id or a model name with square brackets is data: rich's markup drew
    # "run[red]1.jsonl" as "run1.jsonl" and "[bold]" as nothing
    view = output.View({}, tables=[output.Table("t[bold]itle", ("k[i]", "v"),
                                                [("trace", "run[red]1.jsonl"), ("id", "[b]")],
                                                caption="c[dim]ap")])
    output.emit(view, as_json=False)
    out = capsys.readouterr().out
    for s in ("t[bold]itle", "k[i]", "run[red]1.jsonl", "[b]", "c[dim]ap"):
        assert s in out, s
    output.emit_tree("op [red]1", [{"call": "f", "args": {"h": "[ab]"}, "returns": None,
                                    "children": []}])
    out = capsys.readouterr().out
    assert "op [red]1" in out and "f(h=[ab])" in out


def test_numbers_right_text_left(capsys):
    view = output.View({}, tables=[output.Table("t", ("name", "n", "formatted", "rule"),
                                                [("a", 5, "2,444.856", "the first rule"),
                                                 ("b", 12345, "-3.5%", "x")])])
    output.emit(view, as_json=False)
    lines = capsys.readouterr().out.splitlines()
    row = next(x for x in lines if x.startswith("│ a"))
    cells = [c for c in row.split("│")[1:-1]]
    assert cells[1].endswith("5 ") and cells[2].endswith("2,444.856 ")      # right
    assert cells[3].startswith(" the first rule")                           # left
    row = next(x for x in lines if x.startswith("│ b"))
    assert row.split("│")[4].startswith(" x ")
