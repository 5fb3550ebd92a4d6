"""`kvcli stats` checks each block event's `group` against the header's groups: an index past
them (or negative, or not an integer) is one line naming the file, the line and the field, exit
2, on every path (vectorized, per-block, native kernel). Before, allocate and free took any
group silently (the request's blocks then uncounted: wrong numbers), and touch, cache and evict
raised a bare IndexError without the field, or took -1 as the last group."""

from __future__ import annotations

import pytest
from stats_streams import Stream
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.analysis.stats import native_events, stats_from_lines
from kvcore.errors import InputError

runner = CliRunner()
FULL = {"type": "full_attention", "block_size": 4}


def stream(groups=None) -> Stream:
    s = Stream(block_size=4, num_blocks=10, groups=groups)
    s.at(0).arrive("A", 8).admit("A", 8, 0, [[11, 12]] * len(groups or [FULL]))
    s.allocate("A", [1, 2])
    return s.cache("A", [1, 2], [11, 12])


# each kind with fields that are right for the stream above (only the group is wrong)
EVENTS = {
    "allocate": {"blocks": [3]},
    "touch": {"blocks": [1], "hashes": [11]},
    "cache": {"blocks": [3], "hashes": [13]},
    "evict": {"blocks": [1], "hashes": [11]},
    "free": {"blocks": [1, 2], "freed": [1, 2], "evictable": [1, 2]},
}


@pytest.mark.parametrize("kind", sorted(EVENTS))
@pytest.mark.parametrize("group, shown", [(1, "1"), (5, "5"), (-1, "-1"), (-2, "-2"),
                                          (True, "true"), (None, "null"), (0.0, "0.0")])
def test_a_group_not_in_the_header_is_refused(kind, group, shown, tmp_path):
    s = stream().add(kind, "A", group, **EVENTS[kind]).end()
    res = runner.invoke(app, ["stats", s.write(tmp_path / "bad.jsonl")])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == (f"error: {tmp_path / 'bad.jsonl'}:6: field 'group': {shown} "
                                  "is not a KV cache group index of this stream (the header's "
                                  "groups: 0, its only one)")
    lines = s.lines()                           # the per-block reference says the same
    with pytest.raises(InputError) as err:
        stats_from_lines("t.jsonl", lines[0], iter(lines[1:]), per_block=True)
    assert str(err.value).startswith(f"t.jsonl:6: field 'group': {shown} is not")


@pytest.mark.parametrize("kind", sorted(EVENTS))
def test_two_groups_take_1_and_refuse_2(kind, tmp_path):
    groups = [FULL, FULL]
    ok = stream(groups)
    if kind == "evict":                         # group 1 must hold the hash it drops
        ok.cache("A", [3], [13], group=1)
        ok.add(kind, "A", 1, blocks=[3], hashes=[13]).end()
    else:
        ok.add(kind, "A", 1, **EVENTS[kind]).end()
    res = runner.invoke(app, ["stats", ok.write(tmp_path / "ok.jsonl"), "--json"])
    assert res.exit_code == 0, res.output
    bad = stream(groups).add(kind, "A", 2, **EVENTS[kind]).end()
    res = runner.invoke(app, ["stats", bad.write(tmp_path / "bad.jsonl")])
    assert res.exit_code == 2
    assert res.stderr.strip().endswith(":6: field 'group': 2 is not a KV cache group index of "
                                       "this stream (the header's groups: 0..1)")


@pytest.mark.skipif(not native_events.available(), reason="no native stats kernel")
@pytest.mark.parametrize("kind", sorted(EVENTS))
def test_the_native_kernel_refuses_it_too(kind):
    lines = stream().add(kind, "A", 3, **EVENTS[kind]).end().lines()
    with pytest.raises(InputError) as err:
        stats_from_lines("t.jsonl", lines[0], iter(lines[1:]), native=True)
    assert str(err.value).startswith("t.jsonl:6: field 'group': 3 is not")
