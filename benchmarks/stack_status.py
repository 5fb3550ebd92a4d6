"""Which stack a tree's kvcore runs on, for the benchmarks that time a tree's processes.

Asked in a child process, as the timed runs are: `kvcore.compiled.status()` with the tree on
PYTHONPATH, KVCLI_PURE unset, from a scratch folder (so that the current directory does not
shadow the tree): "compiled", or why not ("pure (stale build: ...)", ...).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def stack_status(root: Path) -> str:
    probe = "from kvcore import compiled; print(compiled.status())"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root), "KVCLI_PURE": ""},
                          cwd=tempfile.gettempdir(), check=True).stdout.strip()


def require_compiled(root: Path, option: str = "--compiled") -> None:
    """Stop (exit 2, one line) unless ``root`` runs on a fresh compiled build."""
    status = stack_status(root)
    if status != "compiled":
        print(f"{option}: this tree's stack is {status} (make compiled)", file=sys.stderr)
        raise SystemExit(2)
