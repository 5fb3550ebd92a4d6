"""The values an event brings into the stats, checked as they enter, in C where they are lists.

A value of another type did not always fail where it was used: a string among a `cache`
line's hashes was cached as a key of its own, a `resumed` of "no" counted as true, a
`prompt_tokens` of 1.5 or true added to the totals, a float among `admit`'s `first_tokens`
was truncated to a token. Each check is a type test on a scalar, or, on a list, the set of its
elements' types with its min and max (three passes in C: the stats pass keeps its speed); the
error names the field, the reader the file and the line (`events_reader.read_stream`).
"""

from __future__ import annotations

from kvcore.analysis.event_fields import FieldWorded, flag_problem, shown

HASHES = 1 << 64          # a block hash, vLLM's 64-bit event form
TOKENS = 1 << 64          # a token id: a trace's are below 2**64 (a hash id's tokens wrap there)
COUNTS = 1 << 63          # a token count: what an int64 holds
_INT = {int}


def ints_ok(values: object, top: int) -> bool:
    """Whether ``values`` is a list of ints in ``0 .. top - 1`` (a bool is no int here)."""
    return type(values) is list and (not values or (
        set(map(type, values)) == _INT and min(values) >= 0 and max(values) < top))


def check_ints(values: object, field: str, top: int = COUNTS, what: str = "a whole number "
               "(token ids and counts are ints >= 0)") -> None:
    """Raise unless ``values`` is a list of ints in ``0 .. top - 1``, naming the first that
    is not."""
    if ints_ok(values, top):
        return
    if type(values) is not list:
        raise FieldWorded(f"must be a list of whole numbers, got {shown(values)}", field)
    bad = next(x for x in values if type(x) is not int or not 0 <= x < top)
    raise FieldWorded(f"holds {shown(bad)}, not {what}", field)


def check_hashes(values: object, field: str = "hashes") -> None:
    """Raise unless ``values`` is a list of block hashes (ints in 0 .. 2**64 - 1)."""
    if type(values) is list and len(values) == 1:
        # (most block events name one block: no set, min and max for it)
        h = values[0]
        if type(h) is int and 0 <= h < HASHES:
            return
    elif ints_ok(values, HASHES):
        return
    check_ints(values, field, HASHES, "a block hash (an int from 0 to 2**64 - 1)")


def count(value: object, field: str) -> int:
    """``value`` when it is a count (an int from 0 to 2**63 - 1), else raise."""
    if type(value) is not int or not 0 <= value < COUNTS:
        raise FieldWorded(f"must be a whole number >= 0, got {shown(value)}", field)
    return value


def flag(value: object, field: str) -> bool:
    """``value`` when it is true or false, else raise (a "no" was truthy)."""
    if value is not True and value is not False:
        raise FieldWorded(flag_problem(value, {}) or "", field)
    return value


# `admit`'s lists: per group (a list each, null for a group coarser than the hash block), and
# the chain's, once (docs/events.md)
_PER_GROUP = (("prompt_hashes", HASHES), ("first_tokens", TOKENS), ("content_hashes", HASHES))
_CHAIN = (("chain_hashes", HASHES), ("chain_first_tokens", TOKENS),
          ("chain_content_hashes", HASHES))
_WHAT = {f: ("a token id (an int from 0 to 2**64 - 1)" if f.endswith("tokens") else
             "a block hash (an int from 0 to 2**64 - 1)") for f, _ in (*_PER_GROUP, *_CHAIN)}


def check_admit(ev: dict, n_groups: int) -> None:
    """An `admit` line's flags, its domain and its lists (what `misses.py`, `hash_units.py` and
    `blockkeys.py` read: a string hash missed quietly, a null first token was Python's words)."""
    flag(ev["counted"], "counted")
    flag(ev["resumed"], "resumed")
    domain = ev.get("hash_domain")
    if domain is not None and type(domain) is not str:
        raise FieldWorded(f"must be a string or null, got {shown(domain)}", "hash_domain")
    cpu = ev.get("cpu_hit_tokens")
    if cpu is not None:
        count(cpu, "cpu_hit_tokens")
    for field, top in _PER_GROUP:
        # (absent: a stream without hashes, whose misses are not told apart, docs/events.md;
        # kvcli never writes null there)
        lists = ev.get(field)
        if lists is None and field not in ev:
            continue
        if type(lists) is not list:
            raise FieldWorded(f"must be a list (one list per group), got {shown(lists)}", field)
        if len(lists) != n_groups:
            raise FieldWorded(f"holds {len(lists)} lists for the header's {n_groups} KV cache "
                              "groups", field)
        for inner in lists:
            if inner is not None and not ints_ok(inner, top):
                check_ints(inner, field, top, _WHAT[field])
    for field, top in _CHAIN:
        values = ev.get(field)
        if values is not None and not ints_ok(values, top):
            check_ints(values, field, top, _WHAT[field])
