"""Compare kvcli's weights per rank with answers.json here (a development tool, run from the
project root with the project's venv: python tests/data/weights_census/family_lists/
compare_lists.py [-v] [-g]): ../families/compare_families.py's comparison on this folder."""
# ruff: noqa
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "families"))
from compare_families import main

if __name__ == "__main__":
    main(HERE)
