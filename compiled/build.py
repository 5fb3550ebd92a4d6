"""Build the compiled stack (`make compiled`): mypyc compiles `kvcore.compiled.MODULES` from
their Python source, and Cython the native kernels (`kvcore.compiled.NATIVE`), into
`compiled/lib/`, and writes the manifest kvcore checks before it uses them
(`kvcore/compiled.py`). Needs mypy and Cython (the dev extra) and a C compiler.

    .venv/bin/python compiled/build.py
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvcore.compiled import (
    LIB,
    MANIFEST,
    MODULES,
    NATIVE,
    PYTHON_TAG,
    digest,
    source,
    unlisted_includes,
)

# What a native kernel links to beyond Python: the block hashers call OpenSSL's sha256
# (libcrypto, which Python's own hashlib links to; its headers come with libssl-dev, which
# building Python needs too). Its sha256 functions are deprecated in OpenSSL 3, not removed.
_SHA256 = {"libraries": ["crypto"], "define_macros": [("OPENSSL_SUPPRESS_DEPRECATED", None)]}
LINK = {"kvcore.engine.native_hash": _SHA256, "kvcore.engine.native_ahead": _SHA256}


def up_to_date(digests: dict[str, str]) -> bool:
    try:
        built = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return False
    return built.get("python") == PYTHON_TAG and set(built["modules"]) == set(digests) \
        and all(built["modules"][m]["sha256"] == d for m, d in digests.items()) \
        and all((LIB / e["file"]).exists() for e in built["modules"].values())


def main() -> int:
    from Cython.Build import cythonize
    from mypyc.build import mypycify
    from setuptools import Distribution, Extension

    unlisted = unlisted_includes()
    if unlisted:
        raise SystemExit("build: kvcore/compiled.py's NATIVE does not list what a native kernel "
                         f"includes (an edit to it would go unseen): {', '.join(unlisted)}")
    paths = [str(source(m).relative_to(ROOT)) for m in MODULES]
    built = (*MODULES, *NATIVE)
    digests = {m: digest(m) for m in built}
    if up_to_date(digests):
        print(f"compiled stack up to date ({MANIFEST.parent})", file=sys.stderr)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="kvcore-mypyc."))
    staged = tmp / "lib"
    os.chdir(ROOT)              # mypycify names the modules by their paths from here
    try:
        # the native kernels' C goes to the scratch folder, not beside their .pyx
        native = cythonize([Extension(m, [str(source(m).relative_to(ROOT))], **LINK.get(m, {}))
                            for m in NATIVE],
                           build_dir=str(tmp / "cy"), quiet=True,
                           compiler_directives={"language_level": 3})
        # A bare Distribution: setup() would read pyproject.toml, which is not this build.
        dist = Distribution({"name": "kvcore-compiled",
                             "ext_modules": mypycify(paths, opt_level="3",
                                                     target_dir=str(tmp / "c")) + native})
        dist.verbose = False            # no compiler command lines
        cmd = dist.get_command_obj("build_ext")
        cmd.build_lib, cmd.build_temp = str(staged), str(tmp / "obj")
        dist.run_command("build_ext")
        suffix = next(p.name.split(".", 1)[1] for p in staged.rglob("*.so"))
        shared = list(staged.glob("*__mypyc.*"))
        manifest = {
            "python": PYTHON_TAG,
            "modules": {m: {"sha256": digests[m],
                            "file": str(Path(*m.split(".")).with_name(
                                m.rsplit(".", 1)[1] + "." + suffix))}
                        for m in built},
            "shared": ({"module": shared[0].name.split(".", 1)[0], "file": shared[0].name}
                       if shared else None),
        }
        for m in built:
            if not (staged / manifest["modules"][m]["file"]).exists():
                raise SystemExit(f"build: no extension for {m}")
        (staged / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        if LIB.exists():
            shutil.rmtree(LIB)
        shutil.move(str(staged), str(LIB))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    changed = [m for m in built if digest(m) != digests[m]]
    if changed:
        print(f"build: {changed[0]} changed during the build; run it again", file=sys.stderr)
        return 1
    print(f"compiled {len(MODULES)} modules and {len(NATIVE)} native kernels into "
          f"{MANIFEST.parent}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
