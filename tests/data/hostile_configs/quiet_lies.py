# ruff: noqa
"""Quiet lies among a campaign's passes: a mutant `kvcli config` sized (exit 0) though one key
kvcore reads was given a value of the wrong type ("x", [1], {"a": 1}, true, unicode) or none at
all for a nested config, and whose report equals the unmutated config's under the same options:
the wrong value was read as the default (or skipped) without a word. Each is a lead to read, not
a finding by itself (a key may be read only where this config does not reach it).

Usage (from the repository root, KVCLI_PURE=1, KVMUT_SET as for the run):
  python tests/data/hostile_configs/quiet_lies.py OUT.jsonl [OUT.jsonl ...]
"""
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from draw_options import memory  # noqa
from mutate_configs import ROOT, SEEDS, SET, mutant, options  # noqa

WRONG = ('"x"', "[1]", '{"a": 1}', "true", '"\\u00e9\\u202e\\u0000"', "[]", "{}", '""', '"1"')
READ = "".join(p.read_text() for p in (ROOT / "kvcore").rglob("*.py"))


def leads(paths):
    """(seed, index) of each single-edit pass whose edit gave a read key a wrong-typed value."""
    for path in paths:
        # (the seed from the file's name: b91.jsonl, a92.jsonl, s85.jsonl)
        # (its leading digits: b101.jsonl is seed 101, not 10)
        digits = Path(path).stem.lstrip("abcdefghijklmnopqrstuvwxyz_")
        seed = int(re.match(r"\d*", digits).group() or 0)
        for line in open(path):
            r = json.loads(line)
            if r.get("kind") or r.get("cmd") != "config" or r.get("detail") != "ok":
                continue
            edit = r["mutation"]
            if ";" in edit or "=" not in edit:
                continue
            where, value = edit.split("=", 1)
            if value in WRONG and f'"{where.split(".")[-1]}"' in READ:
                yield seed, r["i"], r["family"], r["seed_config"], edit


def main(paths):
    from typer.testing import CliRunner

    from kvcli.app import app
    runner, tmp = CliRunner(), Path(tempfile.mkdtemp(prefix="kvlies"))
    base = {name: cfg for _, name, cfg, _ in SEEDS}
    for seed, i, family, name, edit in leads(paths):
        _, _, _, text, _ = mutant(seed, i)
        opts = options(seed, i, SET, family)
        outs = []
        for label, cfg_text in (("m", text), ("b", json.dumps(base[name]))):
            f = tmp / f"{seed}-{i}-{label}.json"
            f.write_text(cfg_text)
            res = runner.invoke(app, ["config", "--model-config", str(f), *memory(SET), "--json",
                                      *opts])
            outs.append(res.stdout.replace(str(f), "F") if res.exit_code == 0 else None)
        if outs[0] is not None and outs[0] == outs[1]:
            print(json.dumps({"seed": seed, "i": i, "family": family, "seed_config": name,
                              "mutation": edit, "options": opts}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
