"""When kvcore uses the compiled build (`kvcore/compiled.py`): only a build of exactly today's
sources, for this interpreter, complete, and never with KVCLI_PURE set; and the call recorder
refuses the build (it patches Python methods)."""

from __future__ import annotations

import json

import pytest

from kvcore import compiled


def fake_build(tmp_path, **changes) -> None:
    """A build folder as `compiled/build.py` writes it (empty files stand for the extensions)."""
    modules = {m: {"sha256": compiled.digest(m), "file": m.replace(".", "/") + ".so"}
               for m in (*compiled.MODULES, *compiled.NATIVE)}
    manifest = {"python": compiled.PYTHON_TAG, "modules": modules,
                "shared": {"module": "abc__mypyc", "file": "abc__mypyc.so"}}
    manifest.update(changes)
    for entry in [*modules.values(), manifest["shared"]]:
        path = tmp_path / entry["file"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))


def test_a_fresh_complete_build_is_used(tmp_path, monkeypatch):
    monkeypatch.delenv("KVCLI_PURE", raising=False)
    fake_build(tmp_path)
    status, files = compiled.decide(tmp_path)
    assert status == "compiled"
    assert set(files) == {*compiled.MODULES, *compiled.NATIVE, "abc__mypyc"}
    assert files["kvcore.block_pool"] == tmp_path / "kvcore/block_pool.so"


def test_kvcli_pure_wins(tmp_path, monkeypatch):
    fake_build(tmp_path)
    monkeypatch.setenv("KVCLI_PURE", "1")
    assert compiled.decide(tmp_path) == ("pure (KVCLI_PURE is set)", {})
    monkeypatch.setenv("KVCLI_PURE", "0")            # 0 or empty: not set
    assert compiled.decide(tmp_path)[0] == "compiled"


def test_no_build_a_stale_build_another_python_or_a_missing_file_is_not_used(tmp_path,
                                                                             monkeypatch):
    monkeypatch.delenv("KVCLI_PURE", raising=False)
    assert compiled.decide(tmp_path) == ("pure (not built: make compiled)", {})
    stale = {m: {"sha256": compiled.digest(m), "file": m + ".so"}
             for m in (*compiled.MODULES, *compiled.NATIVE)}
    stale["kvcore.block_pool"]["sha256"] = "0" * 64      # the source changed since
    fake_build(tmp_path, modules=stale)
    assert compiled.decide(tmp_path) == (
        "pure (stale build: kvcore.block_pool changed since make compiled)", {})
    stale["kvcore.block_pool"]["sha256"] = compiled.digest("kvcore.block_pool")
    stale["kvcore.analysis.stats.native"]["sha256"] = "0" * 64   # a .pyx or .pxi changed
    fake_build(tmp_path, modules=stale)
    assert compiled.decide(tmp_path)[0] == (
        "pure (stale build: kvcore.analysis.stats.native changed since make compiled)")
    fake_build(tmp_path, python="cpython-399-linux")
    assert compiled.decide(tmp_path)[0].startswith("pure (built for cpython-399-linux")
    fake_build(tmp_path)
    (tmp_path / "kvcore/request.so").unlink()
    assert compiled.decide(tmp_path) == ("pure (incomplete build: make compiled)", {})


def test_the_call_recorder_refuses_the_compiled_stack(monkeypatch):
    from kvcore.call_tree import CallRecorder

    monkeypatch.setitem(compiled._state, "status", "compiled")
    with pytest.raises(RuntimeError, match="KVCLI_PURE=1"), CallRecorder():
        pass


def test_every_file_a_native_kernel_includes_is_listed(tmp_path, monkeypatch):
    """An include `NATIVE` misses would leave its edits out of the build's digest."""
    assert compiled.unlisted_includes() == []
    (tmp_path / "k.pyx").write_text('include "a.pxi"\n')
    (tmp_path / "a.pxi").write_text('include "b.pxi"\n')
    (tmp_path / "b.pxi").write_text("")
    monkeypatch.setattr(compiled, "NATIVE", {"x.k": ("k.pyx", "a.pxi")})
    monkeypatch.setattr(compiled, "source", lambda m: tmp_path / "k.pyx")
    assert compiled.unlisted_includes() == ["x.k: b.pxi"]


def test_every_compiled_module_is_type_checked():
    """docs/architecture.md: the build's modules are type-clean under mypy, because `mypy` checks
    them (`[tool.mypy]` files); partial_hashes and hash_json were built but not checked."""
    import tomllib

    files = tomllib.loads((compiled.ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    unchecked = [m for m in compiled.MODULES if not any(
        path == f or path.startswith(f + "/") for f in files
        for path in [m.replace(".", "/") + ".py"])]
    assert unchecked == []
