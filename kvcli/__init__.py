"""kvcli: the command-line face of kvcore. Commands parse options and call one function each;
`kvcli.output` is the only module that writes results."""

import os
import sys

# The call recorder (`--calls`) patches the stack's Python methods, which the compiled build's
# classes do not allow (`kvcore/compiled.py`): such a run uses the pure-Python modules. This has
# to be decided before kvcore is first imported.
if "--calls" in sys.argv[1:]:
    os.environ["KVCLI_PURE"] = "1"
