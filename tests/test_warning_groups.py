"""`kvcore.warning_groups`: the grouping `kvcli sweep` (jobs) and `kvcli cluster` (replicas)
share (naming its sources by `kvcore.index_runs`); their output lines are pinned by
tests/test_sweep_cli.py and tests/test_cluster_cli.py."""

from kvcore.index_runs import index_runs
from kvcore.warning_groups import sources_named, warning_groups


def test_each_warning_once_with_its_sources_in_order_of_first_appearance() -> None:
    sources = [(0, ["b", "a"]), (1, []), (2, ["a"]), (5, ["a", "c"]), (7, ["b"])]
    assert warning_groups(sources) == [("b", [0, 7]), ("a", [0, 2, 5]), ("c", [5])]
    assert warning_groups(iter([(3, iter([1]))])) == [("1", [3])]     # text, from any iterable
    assert warning_groups([]) == []


def test_sources_named() -> None:
    assert sources_named("replica", [3]) == "replica 3"
    assert sources_named("replica", [0, 1, 2, 3]) == "replicas 0-3"
    assert sources_named("job", [0, 2, 5, 6, 7]) == "jobs 0, 2, 5-7"


def test_index_runs():
    assert index_runs([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
    assert index_runs([3]) == "3"
