"""Speed paths that must not change an output: vLLM's events written by orjson from the event
objects (`kvcore/kv_events.py`: their `type` field), and `kvcli`'s entry point building only the
command named (`kvcli.app.only_the_command_named`)."""

from __future__ import annotations

import signal
import sys

import orjson
import pytest

from kvcli import app as app_module
from kvcore import gc_pause
from kvcore.kv_events import AllBlocksCleared, BlockRemoved, BlockStored, removed_events


def _events() -> list:
    return [
        BlockStored([2**64 - 1, 0], None, [1, 2, 3], 16, None, "GPU", None),
        BlockStored([7], 2**63, [], 4, 3, "CPU", "lora-a", [("lora-a",), None], 1,
                    "sliding_window", 128, None, None, "s1", [[1, 2]]),
        BlockRemoved([2**63 + 5], "GPU", 0),
        BlockRemoved(block_hashes=[1, 2], medium=None),
        AllBlocksCleared(),
    ]


def test_orjson_writes_an_event_as_its_dict():
    for ev in _events():
        d = ev.to_dict()
        assert next(iter(d)) == "type" and d["type"] == type(ev).__name__
        assert orjson.dumps(ev) == orjson.dumps(d)
    batch = _events()
    assert orjson.dumps({"events": batch}) == orjson.dumps({"events": [e.to_dict() for e in batch]})


def test_type_is_no_argument_and_not_compared():
    with pytest.raises(TypeError):
        BlockRemoved([1], "GPU", 0, type="x")  # type: ignore[call-arg]
    assert BlockRemoved([1], "GPU", 0) == BlockRemoved([1], "GPU", 0)
    assert "type" not in repr(BlockRemoved([1], "GPU", 0))


def test_removed_events_one_per_key_in_order():
    hashes = [bytes(range(32)), b"\xff" * 32, b"\x01\x02"]      # (a short one: hash_to_int)
    got = removed_events(hashes, [0, 2, 1], "GPU")
    assert got == [BlockRemoved([int.from_bytes(h, "big") & (2**64 - 1)], "GPU", g)
                   for h, g in zip(hashes, [0, 2, 1], strict=True)]


def test_entry_point_builds_the_named_command_and_restores_the_app(monkeypatch, capsys):
    # main() declares the process one-shot (`kvcore.gc_pause`): left so, every later replay in
    # this test process froze what the collector tracks (gc.freeze), and the objects Triton's
    # nanobind module made at import were never freed: "nanobind: leaked 4 instances of type
    # triton._C.libtriton.ir.attribute" at the suite's exit
    monkeypatch.setattr(gc_pause, "_one_shot", False)
    # (and it installs kvcli's SIGTERM / SIGHUP handlers, which raise KeyboardInterrupt: put
    # the test process's own back afterwards)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        _entry_point_cases(monkeypatch)
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    capsys.readouterr()


def _entry_point_cases(monkeypatch) -> None:
    app = app_module.app
    before = list(app.registered_commands), list(app.registered_groups)
    seen = []
    real = app_module.only_the_command_named

    def spy(argv):
        real(argv)
        seen.append(([c.name for c in app.registered_commands],
                     [g.name for g in app.registered_groups]))

    monkeypatch.setattr(app_module, "only_the_command_named", spy)
    for argv, kept in ((["config", "--list"], (["config"], [])),
                       (["clock", "gpus"], ([], ["clock"])),
                       (["--version"], None), (["confi"], None)):
        monkeypatch.setattr(sys, "argv", ["kvcli", *argv])
        with pytest.raises(SystemExit):
            app_module.main()
        if kept is not None:
            assert seen[-1] == kept
        else:
            assert len(seen[-1][0]) == len(before[0])
        assert (app.registered_commands, app.registered_groups) == before
