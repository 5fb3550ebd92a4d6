"""Open an input: a path, or ``-`` for stdin, gzip recognised by its two magic bytes (never by the
file name), a UTF-8 byte-order mark at the start skipped. Traces, op scripts, event streams and
the curve's fast reader all open theirs here, so each failure is worded once, the same in every
command:

    name, stream = open_source(path)     # name: the path, or "<stdin>"; stream: io.BufferedReader
    stream.peek(n)                       # the first bytes, left unread (`kvcli stats` sniffs so)
    for n, text in text_lines(name, stream): ...   # 1-based numbers; a non-UTF-8 line names itself
    close_source(stream)                 # closes a file, leaves stdin open

``-`` opens the same stream every time for the same ``sys.stdin``: what one reader only peeked at
is still there for the next one. Opening fails with `InputError` naming the file: "no such file",
"is a directory, not a file", "is a device, not a file" (one that never ends: /dev/zero; /dev/null
and a terminal are read), "permission denied", or "cannot open: <reason>"; reading a broken
gzip stream fails with "cannot read: <reason>", a line past `MAX_LINE_BYTES` with its number.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from kvcore.errors import InputError, path_label

if TYPE_CHECKING:       # (typeshed's reader is generic in what it buffers: a file, gzip, stdin)
    Reader = io.BufferedReader[Any]
else:
    Reader = io.BufferedReader

STDIN = "-"
STDIN_NAME = "<stdin>"
GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"     # skipped at the start of a stream (some editors write it)
BUFFER_SIZE = 1 << 16
# What reading a (possibly gzipped) stream raises besides a decode error: an I/O error, a gzip
# stream cut short (EOFError), corrupt deflate data (zlib.error).
READ_ERRORS = (OSError, EOFError, zlib.error)
# The longest line a line reader takes: a request at its 10,000,000-token limit, written as
# token ids (at most 8 bytes a token: six digits, a comma, a space), is under it, as is an event
# stream's `admit` line for it. Past it the input is no trace: a stream of zeros (`cat /dev/zero
# | kvcli replay -`) grew one "line" until the machine ran out of memory. Parsing a line takes
# up to ~16 times its bytes (a list of small ints): 1 GiB allowed a valid line that needed 16 GB.
MAX_LINE_BYTES = 1 << 28
# The most an input read whole takes (an op script, a sweep spec, a model's config.json): an op
# script of 2,000 requests is 21 MB; past this it is an endless stream.
MAX_WHOLE_BYTES = 1 << 30

_stdin: tuple[object, Reader] | None = None    # (sys.stdin.buffer, its stream)
# A named pipe (a FIFO, `<(cat T)`, /dev/stdin on a pipe) can be read once: opened once and kept
# open, as stdin, for the command's next reader (`kvcli stats` sniffs, then replays: the second
# open found it empty, "empty trace", or blocked for ever on a FIFO)
_pipes: dict[str, Reader] = {}


def _same_file(stream: Reader, path: str) -> bool:
    """Whether ``path`` still names the pipe ``stream`` reads (not a new one made there)."""
    try:
        raw = stream.raw
        fd = raw.fileno() if not isinstance(raw, gzip.GzipFile) else raw.fileobj.fileno()  # type: ignore[union-attr]
        a, b = os.fstat(fd), os.stat(path)
    except (OSError, AttributeError, ValueError):
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def is_pipe(path: str) -> bool:
    """Whether ``path`` names a pipe or socket (readable once), not a file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def open_source(path: str, *, buffer_size: int = BUFFER_SIZE) -> tuple[str, Reader]:
    """(name for messages, peekable binary stream), decompressed when it starts with gzip's
    magic bytes. ``buffer_size`` bounds what one `peek` shows (stdin keeps its own buffer).
    The name is `path_label(path)`: outputs record it."""
    if path == STDIN:
        return STDIN_NAME, _stdin_stream(buffer_size)
    if not path:        # (an unset shell variable: it said "error: : no such file")
        raise InputError("an empty path: give a file, or - for stdin")
    name = path_label(path)
    kept = _pipes.pop(path, None)
    if kept is not None and not kept.closed and _same_file(kept, path):
        _pipes[path] = kept
        return name, kept
    try:
        f = cast(Reader, open(path, "rb", buffering=buffer_size))  # noqa: SIM115 (returned open)
    except FileNotFoundError:
        raise InputError("no such file", path=name) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path=name) from None
    except PermissionError:
        raise InputError("permission denied", path=name) from None
    except OSError as err:
        raise InputError(f"cannot open: {err.strerror or err}", path=name) from None
    if _endless_device(f):
        f.close()
        # /dev/zero, /dev/full, /dev/urandom never end: reading one ate the machine's memory
        raise InputError("is a device, not a file (of devices only /dev/null and a terminal "
                         "are read; - reads stdin)", path=name)
    try:
        magic = f.peek(2)[:2]
    except OSError as err:
        f.close()
        raise InputError(f"cannot read: {err.strerror or err}", path=name) from None
    pipe = stat.S_ISFIFO(os.fstat(f.fileno()).st_mode)
    if magic == GZIP_MAGIC and pipe:        # (read on from the bytes peeked: no second open)
        f = io.BufferedReader(gzip.GzipFile(fileobj=f, mode="rb"), buffer_size)
    elif magic == GZIP_MAGIC:
        f.close()
        f = io.BufferedReader(gzip.open(path, "rb"), buffer_size)  # noqa: SIM115
    try:
        _skip_bom(f)
    except READ_ERRORS as err:
        f.close()
        raise InputError(f"cannot read: {err}", path=name) from None
    if pipe:
        _pipes[path] = f
    return name, f


def _endless_device(f: Reader) -> bool:
    """A character device other than /dev/null and a terminal (those end, or a person ends
    them)."""
    st = os.fstat(f.fileno())
    if not stat.S_ISCHR(st.st_mode) or f.isatty():
        return False
    try:
        null = os.stat(os.devnull)
    except OSError:
        return True
    return st.st_rdev != null.st_rdev


def _skip_bom(stream: Reader) -> None:
    """Read past a UTF-8 byte-order mark at the start, so every reader (and a `peek`) sees the
    text after it."""
    if stream.peek(len(UTF8_BOM))[:len(UTF8_BOM)] == UTF8_BOM:
        stream.read(len(UTF8_BOM))


def source_size(path: str, stream: Reader) -> int | None:
    """The bytes a reader of `stream` (from `open_source(path)`) will see: a plain file's size;
    None for stdin and for gzip (its decompressed size is not known up front)."""
    if path == STDIN or isinstance(stream.raw, gzip.GzipFile) or path in _pipes:
        return None
    return os.fstat(stream.fileno()).st_size


def close_source(stream: Reader) -> None:
    """Close a stream from `open_source`; stdin's and a named pipe's stay open for the next
    reader."""
    if (_stdin is None or stream is not _stdin[1]) and stream not in _pipes.values():
        stream.close()


def _stdin_stream(buffer_size: int) -> Reader:
    global _stdin
    raw = sys.stdin.buffer
    if _stdin is not None and _stdin[0] is raw and not _stdin[1].closed:
        return _stdin[1]
    # A real stdin is already a BufferedReader; an in-memory one (tests) gets a peekable buffer.
    stream: Reader = (raw if isinstance(raw, io.BufferedReader)
                      else io.BufferedReader(cast(Any, raw), buffer_size))
    try:
        if stream.peek(2)[:2] == GZIP_MAGIC:
            stream = io.BufferedReader(gzip.GzipFile(fileobj=stream, mode="rb"), buffer_size)
        _skip_bom(stream)
    except READ_ERRORS as err:      # (a stdin the shell closed: kvcli/closed_streams.py)
        raise InputError(f"cannot read: {err}", path=STDIN_NAME) from None
    _stdin = (raw, stream)
    return stream


def not_utf8(err: UnicodeDecodeError, column: int) -> str:
    """The message for text that is not UTF-8 (``column``: 1-based, in bytes)."""
    return f"not UTF-8 text: byte 0x{err.object[err.start]:02x} at column {column}"


def text_lines(name: str, stream: Reader) -> Iterator[tuple[int, str]]:
    """Every line (its newline kept) with its 1-based number, decoded one line at a time, so a
    binary or non-UTF-8 line is an `InputError` naming its line."""
    for n, raw in enumerate(bounded_lines(name, stream), 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InputError(not_utf8(err, err.start + 1), path=name, line=n) from None
        yield n, text


def bounded_lines(name: str, stream: Reader,
                  limit: int | None = None) -> Iterator[bytes]:
    """Every line's bytes (newline kept); one past ``limit`` (`MAX_LINE_BYTES`) is an
    `InputError` naming its line, before more than the bound is read, and a read error one
    naming the stream."""
    limit = MAX_LINE_BYTES if limit is None else limit
    try:
        # (readline with a bound, not iteration, which reads a line whatever its length)
        for n, raw in enumerate(iter(functools.partial(stream.readline, limit + 1), b""), 1):
            if len(raw) > limit:
                raise InputError(f"a line longer than {limit:,} bytes: no kvcli input has a line "
                                 "this long (a request holds at most 10,000,000 tokens)",
                                 path=name, line=n)
            yield raw
    except READ_ERRORS as err:
        raise InputError(f"cannot read: {err}", path=name) from None


def read_json(path: str) -> tuple[str, Any]:
    """(the name to show, the JSON document) of a whole-file JSON input (a model's config, a
    calibration file); unreadable or invalid JSON is an `InputError` naming the line."""
    name, stream = open_source(path)
    try:
        text = read_text(name, stream)
    finally:
        close_source(stream)
    try:
        return name, json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON: {err.msg}", path=name, line=err.lineno) from None
    except ValueError as err:
        raise too_many_digits(text, name, err) from None
    except RecursionError:
        # ('[' x 100,000 was a traceback): no config or calibration nests past a few levels
        raise InputError("nested too deeply to be a kvcli input", path=name) from None


def too_many_digits(text: str, name: str, err: ValueError) -> InputError:
    """The error for a ValueError past the decoder's own: an integer of more than 4,300 digits
    (`sys.get_int_max_str_digits`) fails json and tomllib with a bare ValueError, a traceback
    from a config.json, a calibration file or a sweep spec."""
    import re

    most = sys.get_int_max_str_digits()
    found = re.search(r"\d{" + str(most + 1) + ",}", text) if most else None
    if found is None:
        return InputError(f"cannot be read: {err}", path=name)
    return InputError(f"a number of more than {most:,} digits: no value kvcli reads is that "
                      "long", path=name, line=text.count("\n", 0, found.start()) + 1)


def read_text(name: str, stream: Reader) -> str:
    """The whole stream as text; bytes that are not UTF-8 are an `InputError` naming the line,
    more than `MAX_WHOLE_BYTES` one naming the limit (an endless pipe, `cat /dev/zero | kvcli
    script -`, was read until the machine's memory ran out)."""
    limit = MAX_WHOLE_BYTES
    try:
        raw = stream.read(limit + 1)
    except READ_ERRORS as err:
        raise InputError(f"cannot read: {err}", path=name) from None
    if len(raw) > limit:
        raise InputError(f"more than {limit:,} bytes: no input read whole is that "
                         "large (an endless stream?)", path=name)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        start = raw.rfind(b"\n", 0, err.start) + 1
        raise InputError(not_utf8(err, err.start - start + 1), path=name,
                         line=raw.count(b"\n", 0, err.start) + 1) from None
