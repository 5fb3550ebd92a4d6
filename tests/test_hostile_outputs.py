"""Outputs that are not plain files, or cannot be written (issue 11, item 1).

kvcli's one writer (`kvcli.output.open_output`): a regular file (or a new path) is written under
a temporary name in its folder and renamed; a device, a FIFO or ``/dev/stdout`` is written in
place and never replaced; a symlink is followed (the link stays); ``.gz`` is gzip; a path that
cannot be written is one line, exit 2, before the work; a full disk is one line, exit 1;
SIGTERM / SIGHUP stop like Ctrl-C with exit 143 / 129. The device nodes are our own, made in
tmp_path (``mknod c 1 7`` behaves as /dev/full); the machine's /dev/full is never touched.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kvcli import output
from kvcore.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "traces" / "shared-prefix.jsonl"
BIG = ROOT / "tests" / "data" / "traces" / "mooncake" / "conversation_trace.jsonl.gz"


def kvcli(*args, stdout=subprocess.PIPE, timeout=120):
    return subprocess.run([sys.executable, "-m", "kvcli", *map(str, args)], cwd=ROOT,
                          stdout=stdout, stderr=subprocess.PIPE, timeout=timeout, check=False)


def one_error(res, code: int) -> str:
    """The run failed with ``code`` and said so in exactly one line, no traceback."""
    err = res.stderr.decode()
    assert res.returncode == code, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def full_node(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    p = tmp_path / "full"
    os.mknod(p, 0o600 | stat.S_IFCHR, os.makedev(1, 7))
    return p


def no_temp_left(folder: Path) -> None:
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


def test_events_to_a_full_device_keeps_the_node_and_says_enospc_in_one_line(tmp_path):
    node = full_node(tmp_path)
    line = one_error(kvcli("replay", SMALL, "--events", node), 1)
    # (the option is named, as for every other output error)
    assert line == f"error: cannot write {node} (--events): No space left on device"
    assert stat.S_ISCHR(os.stat(node).st_mode)
    no_temp_left(tmp_path)


def test_json_on_a_full_stdout_is_one_line_exit_1(tmp_path):
    node = full_node(tmp_path)
    with open(node, "wb") as out:
        # cache mode: no clock, so no warning before the error line
        line = one_error(kvcli("replay", SMALL, "--mode", "cache", "--json", stdout=out), 1)
    assert line == "error: cannot write stdout: No space left on device"
    with open(node, "wb") as out:
        one_error(kvcli("gen", "multiturn", stdout=out), 1)
    assert stat.S_ISCHR(os.stat(node).st_mode)


def test_gen_into_a_fifo_streams_through_it(tmp_path):
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    res = kvcli("gen", "multiturn", "-o", fifo)
    reader.join(30)
    assert res.returncode == 0, res.stderr.decode()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    lines = got[0].decode().splitlines()
    assert len(lines) > 10 and all("hash_ids" in json.loads(x) for x in lines)
    no_temp_left(tmp_path)


def test_a_symlink_stays_and_its_target_is_written(tmp_path):
    target, link = tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    target.write_text("old\n")
    link.symlink_to(target.name)
    res = kvcli("gen", "shared-prefix", "-o", link)
    assert res.returncode == 0, res.stderr.decode()
    assert link.is_symlink() and os.readlink(link) == target.name
    assert json.loads(target.read_text().splitlines()[0])["hash_ids"]
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to("made.jsonl")
    assert kvcli("gen", "shared-prefix", "-o", dangling).returncode == 0
    assert dangling.is_symlink() and (tmp_path / "made.jsonl").stat().st_size > 0
    no_temp_left(tmp_path)


@pytest.mark.parametrize("case", ["missing folder", "a folder", "parent is a file"])
def test_unwritable_paths_fail_in_one_line_before_the_work(tmp_path, case):
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    path = {"missing folder": tmp_path / "nope" / "ev.jsonl", "a folder": tmp_path / "adir",
            "parent is a file": tmp_path / "afile" / "ev.jsonl"}[case]
    # The trace does not exist: an error about the output proves it was checked first.
    line = one_error(kvcli("replay", tmp_path / "no-such-trace.jsonl", "--events", path), 2)
    assert line.startswith("error: option --events: ")
    for flag in ("--steps", "--requests"):
        res = kvcli("replay", BIG, flag, path)
        assert one_error(res, 2).startswith(f"error: option {flag}: ")
        assert res.stdout == b""            # no summary: the replay did not run
    assert one_error(kvcli("gen", "multiturn", "-o", path), 2).startswith(
        "error: option --output: ")
    assert not (tmp_path / "nope").exists()
    no_temp_left(tmp_path)


@pytest.mark.parametrize("command", ["stats", "curve"])
def test_plot_dir_that_is_a_file_fails_before_the_work(tmp_path, command):
    """`--plot DIR` means one thing in both commands: a folder, created when missing."""
    (tmp_path / "afile").write_text("x")
    line = one_error(kvcli(command, tmp_path / "no-such.jsonl", "--plot", tmp_path / "afile"), 2)
    assert line.startswith("error: option --plot: ") and "is a file" in line
    line = one_error(kvcli(command, tmp_path / "no-such.jsonl", "--plot",
                           tmp_path / "afile" / "charts"), 2)
    assert line.startswith("error: option --plot: ") and "is a file" in line


def test_curve_plot_refuses_a_png_path(tmp_path):
    line = one_error(kvcli("curve", tmp_path / "no-such.jsonl", "--plot", tmp_path / "c.png"), 2)
    assert line.startswith("error: option --plot: ") and "DIR/curve.png" in line
    assert list(tmp_path.iterdir()) == []


def test_read_only_folder_is_refused_before_the_work(tmp_path, monkeypatch):
    # Root bypasses permission bits, so a chmod 0o500 folder is still writable for root; the
    # check is `os.access`, which also sees a read-only mount. Here access is denied by hand.
    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, m: False if str(p) == str(ro) else real(p, m))
    with pytest.raises(InputError) as e:
        output.check_output(str(ro / "ev.jsonl"), "events")
    assert "not writable (permission denied)" in output.describe(e.value)
    with pytest.raises(InputError):
        output.check_output(str(ro / "plots"), "plot", folder=True)


@pytest.mark.skipif(os.geteuid() == 0, reason="root bypasses permission bits (chmod 0o500 is "
                    "still writable for root); covered by the os.access test above")
def test_read_only_folder_as_a_user(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        line = one_error(kvcli("gen", "multiturn", "-o", ro / "t.jsonl"), 2)
        assert "not writable" in line
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize("size", [100_000, 5_000_000])
def test_disk_full_in_the_writer_thread_leaves_no_temp(tmp_path, monkeypatch, size):
    """A regular file is written by a thread (`output_thread.py`): its failure surfaces on the
    main thread (at a later write, or at the close), the temporary file goes."""
    from kvcli import output_thread

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(output_thread, "_write", full)
    target = tmp_path / "t.jsonl"
    with pytest.raises(output.OutputFailed) as e, output.open_output(str(target)) as f:
        for _ in range(size // 100_000):
            f.write(b"x" * 100_000)
    assert "No space left on device" in str(e.value) and str(target) in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_gz_outputs_are_gzip_and_stats_reads_them(tmp_path):
    trace, ev = tmp_path / "t.jsonl.gz", tmp_path / "ev.jsonl.gz"
    assert kvcli("gen", "shared-prefix", "-o", trace).returncode == 0
    assert trace.read_bytes()[:2] == b"\x1f\x8b"
    res = kvcli("replay", trace, "--events", ev, "--steps", tmp_path / "st.jsonl.gz", "--json")
    assert res.returncode == 0, res.stderr.decode()
    assert json.loads(gzip.decompress(ev.read_bytes()).splitlines()[-1])["kind"] == "end"
    gzip.decompress((tmp_path / "st.jsonl.gz").read_bytes())
    res = kvcli("stats", ev, "--json")
    assert res.returncode == 0 and "Traceback" not in res.stderr.decode()
    assert json.loads(res.stdout)["source"]["complete"] is True
    upper = tmp_path / "T.JSONL.GZ"                   # (written as plain text)
    assert kvcli("gen", "shared-prefix", "-o", upper).returncode == 0
    assert upper.read_bytes() == trace.read_bytes()
    no_temp_left(tmp_path)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_midway_end_the_events_with_interrupted(tmp_path, sig, code):
    ev = tmp_path / "ev.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "kvcli", "replay", str(BIG), "--events",
                             str(ev), "--json"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".tmp") and p.stat().st_size > 0
                  for p in tmp_path.iterdir()):       # the replay is writing events
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err.decode()
    assert "Traceback" not in err.decode()
    assert json.loads(out)["interrupted"] is True
    last = ev.read_bytes().splitlines()[-1]
    assert json.loads(last)["kind"] == "interrupted"
    no_temp_left(tmp_path)


def test_ctrl_c_stops_curve_jobs_at_once(tmp_path):
    """`--jobs 2`: Ctrl-C terminates the workers instead of waiting for their points."""
    import gzip
    import signal
    import time

    src = ROOT / "tests" / "data" / "traces" / "mooncake" / "conversation_trace.jsonl.gz"
    trace = tmp_path / "t.jsonl"
    with gzip.open(src, "rt") as f:
        trace.write_text("".join(line for _, line in zip(range(3000), f)))
    cmd = [sys.executable, "-m", "kvcli", "curve", str(trace), "--policies", "optimal,lfu",
           "--capacities", ",".join(str(c) for c in range(20, 2000, 20)), "--block-size", "16",
           "--jobs", "2", "--json"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    time.sleep(5)                      # the workers are busy with their points by now
    assert p.poll() is None
    t = time.perf_counter()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert time.perf_counter() - t < 5 and p.returncode == 130
    assert b"Traceback" not in err and err.strip().splitlines()[-1] == b"interrupted"


def test_a_regular_file_under_dev_is_renamed_into_place(tmp_path):
    """/dev/stdout, /dev/fd/N, /proc/... and devices are written in place; a regular file under
    /dev (a tmpfs's /dev/shm) is written under a temporary name and renamed, as anywhere else
    (it was written in place: a failed run left it half-written)."""
    from kvcli.output_checks import in_place as _in_place

    assert _in_place("/dev/stdout") and _in_place("/dev/fd/1") and _in_place("/proc/self/fd/1")
    assert _in_place("/dev/null")
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm")
    target = shm / f"kvcli-test-{os.getpid()}.jsonl"
    try:
        assert not _in_place(str(target))
        target.write_text("old\n")
        inode = target.stat().st_ino
        assert kvcli("replay", SMALL, "--events", target).returncode == 0
        assert target.stat().st_ino != inode          # a new file, renamed over the old one
        lines = target.read_bytes().splitlines()
        assert json.loads(lines[0])["kind"] == "header" and json.loads(lines[-1])["kind"] == "end"
        assert [p for p in shm.iterdir() if p.name.startswith(f".{target.name}.")] == []
    finally:
        target.unlink(missing_ok=True)
