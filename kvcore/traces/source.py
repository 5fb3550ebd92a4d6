"""Open a trace: a path (optionally `.gz`) or `-` for stdin; yield `(line_number, text)`."""

from __future__ import annotations

import gzip
import io
import sys
from collections.abc import Iterator

from kvcore.errors import InputError


def open_text(path: str) -> io.TextIOBase:
    if path == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
    try:
        if path.endswith(".gz"):
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
        return open(path, encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a trace file", path=path) from None
    except PermissionError:
        raise InputError("permission denied", path=path) from None


def numbered_lines(path: str) -> Iterator[tuple[int, str]]:
    """Non-blank, non-comment lines with their 1-based line numbers."""
    f = open_text(path)
    try:
        for n, text in enumerate(f, 1):
            s = text.strip()
            if s and not s.startswith("#"):
                yield n, s
    except (OSError, EOFError, UnicodeDecodeError) as err:  # bad gzip, binary junk
        raise InputError(f"cannot read: {err}", path=path) from None
    finally:
        if path != "-":
            f.close()
