"""Dev tool (not a test, not run by CI): the architectures vLLM 0.33.0's registry lists as
multimodal (model_executor/models/registry.py `_MULTIMODAL_MODELS`, read from the source: no
class is imported, so none is missed for a package this CPU lacks) -> answers.json. From the
project root:

    ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/multimodal_classes/record_multimodal_classes.py \\
        ~/.cache/vllm-oracle/src/vllm/model_executor/models/registry.py \\
        tests/data/multimodal_classes/answers.json
"""
# ruff: noqa
import ast, json, sys

tree = ast.parse(open(sys.argv[1]).read())
found = None
for node in tree.body:
    target = node.target if isinstance(node, ast.AnnAssign) else (
        node.targets[0] if isinstance(node, ast.Assign) else None)
    if isinstance(target, ast.Name) and target.id == "_MULTIMODAL_MODELS":
        found = ast.literal_eval(node.value)
assert found, "no _MULTIMODAL_MODELS in " + sys.argv[1]
out = {"source": "vllm/model_executor/models/registry.py _MULTIMODAL_MODELS (vLLM 0.33.0)",
       "architectures": {arch: list(where) for arch, where in sorted(found.items())}}
json.dump(out, open(sys.argv[2], "w"), indent=1)
print("done", len(found))
