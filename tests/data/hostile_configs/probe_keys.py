# ruff: noqa
"""Hand probes of single keys, each beside its unmutated config (the tenth campaign's keys the
random draws reach rarely: ERNIE's shared experts and [text, vision] lists, Molmo's and
RADIO's keys, Step-3 / Step-3.5's MoE and sliding-head keys, Voxtral / MiniCPM-o / FoPE /
GLM-4V EVA keys, the ERNIE / Step-3.5 MTP drafts). Each line of a probe file:
`FILE KEY.PATH JSON-VALUE [OPTION ...]` (FILE under tests/data/weights_census, a path's digits
list indices, the value `<del>` deletes the key; `spec=METHOD:K` is `--speculative-config
'{"method": METHOD, "num_speculative_tokens": K}'`). Prints one line a probe: ERR and the refusal,
SAME (sized, a report equal to the unmutated config's: a lead to read), diff (sized
differently), or TRACEBACK.

Usage (from the repository root, KVCLI_PURE=1):
  PYTHONPATH=. python tests/data/hostile_configs/probe_keys.py \
      < tests/data/hostile_configs/probes10.txt
"""
import copy
import json
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app

CENSUS = Path("tests/data/weights_census")
POOL = ["--gpu-memory-gib", "2048", "--max-model-len", "4096", "--json"]


def outcome(runner, path, cfg, opts):
    """`kvcli config`'s JSON report (the file's name taken out), or its last stderr line."""
    path.write_text(json.dumps(cfg))
    res = runner.invoke(app, ["config", "--model-config", str(path), *POOL, *opts])
    if res.exception and not isinstance(res.exception, SystemExit):
        return "TRACEBACK " + repr(res.exception)[:200]
    if res.exit_code == 0:
        return res.stdout.replace(str(path), "F")
    return res.stderr.strip().splitlines()[-1].replace(str(path), "F")


def probe(runner, tmp, file, where, value, opts):
    cfg = json.loads((CENSUS / file).read_text())
    mut = copy.deepcopy(cfg)
    obj = mut
    for k in where[:-1]:
        obj = obj[k]
    if value == "<del>":
        obj.pop(where[-1], None)
    else:
        obj[where[-1]] = value
    got = outcome(runner, tmp / "m.json", mut, opts)
    if not got.startswith("{"):
        tag = "TRACEBACK" if got.startswith("TRACEBACK") else "ERR"
    else:
        tag = "SAME" if got == outcome(runner, tmp / "b.json", cfg, opts) else "diff"
    shown = "" if got.startswith("{") else got[:230]
    print(f"{tag:5} {file} {'.'.join(map(str, where))}={json.dumps(value)} {' '.join(opts)} "
          f":: {shown}", flush=True)


def _spec(opt):
    if not opt.startswith("spec="):
        return [opt]
    method, _, k = opt[5:].partition(":")
    return ["--speculative-config",
            json.dumps({"method": method, "num_speculative_tokens": int(k)})]


def main():
    runner, tmp = CliRunner(), Path(tempfile.mkdtemp(prefix="kvprobe"))
    for line in sys.stdin:
        if not line.strip() or line.startswith("#"):
            continue
        file, where, value, *opts = line.split()
        opts = [o for opt in opts for o in _spec(opt)]
        path = tuple(int(p) if p.isdigit() else p for p in where.split("."))
        probe(runner, tmp, file, path, value if value == "<del>" else json.loads(value), opts)


if __name__ == "__main__":
    main()
