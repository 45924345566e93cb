"""Count the copies of text handling in the production code (``modrag_studio/``, ``nodes/``),
inside the text package (``nodes/text``) and elsewhere. Run from the project folder:
``.venv/bin/python scripts/count_text_copies.py [--tree DIR]`` (``--tree``: another checkout,
for a before/after).

What counts, read from the code (each hit outside the text package is listed):
- a word splitter: a regular expression that is a bare word pattern (``\\w+``, ``[a-z0-9]+``,
  ``[^\\W_]+``, ... alone or first of alternatives), or a comprehension cutting CJK bigrams
  (``s[i:i + 2] for i in ...``);
- a number pattern: a regular expression for a number with a decimal part
  (``\\d+(?:\\.\\d+)?`` and its kin);
- a language detector: a function that weighs a count of Chinese characters against a
  number or another count (``cjk > latin * 1.5``, ``han_ratio > 0.3``);
- a CJK range: a line spelling out a CJK block's bounds (the pattern of
  ``tests/architecture/test_text_home.py``).
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

WORD_PATTERN = re.compile(r"^(?:\\b)?(?:\\w|\[\^\\W_?\]|\[[A-Za-z0-9_'\-]+\])\+(?:\\b)?(?:\|.*)?$")
NUMBER_PATTERN = re.compile(r"\\d.*(?:\[\.,\]|\[,\.\]|\\\.|\[\.\]).*\\d")
SCRIPT_NAME = re.compile(r"(?:^|[^a-z])(?:cjk|han|chinese|zh)(?:[^a-z]|$)", re.I)
CJK_BOUNDS = re.compile(r"\\u(?:4e00|3400|9fff|4dbf|3040|30ff|ac00|d7af|f900|faff)"
                        r"|\\U0002|0x4e00|0x9fff|[\u4e00-\u9fff]-[\u4e00-\u9fff]")
CONCEPTS = ("word splitters", "number patterns", "language detectors", "CJK ranges")


def _bigram_cut(node: ast.AST) -> bool:
    """``s[i:i + 2]`` inside a comprehension."""
    if not isinstance(node, ast.Subscript) or not isinstance(node.slice, ast.Slice):
        return False
    upper = node.slice.upper
    return (isinstance(upper, ast.BinOp) and isinstance(upper.op, ast.Add)
            and isinstance(upper.right, ast.Constant) and upper.right.value == 2)


def _weighs_script(compare: ast.Compare) -> bool:
    if not all(isinstance(op, ast.Gt | ast.GtE | ast.Lt | ast.LtE) for op in compare.ops):
        return False
    text = ast.unparse(compare)
    return bool(SCRIPT_NAME.search(text)) and bool(re.search(r"\d|len\(|count", text))


def hits(path: Path) -> dict[str, list[str]]:
    """Each concept's hits in one module, as ``line: what``."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    found: dict[str, list[str]] = {c: [] for c in CONCEPTS}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if WORD_PATTERN.match(node.value):
                found["word splitters"].append(f"{node.lineno}: {node.value[:60]!r}")
            if NUMBER_PATTERN.search(node.value) and len(node.value) < 400:
                found["number patterns"].append(f"{node.lineno}: {node.value[:60]!r}")
        elif isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            if _bigram_cut(node.elt) or (isinstance(node.elt, ast.Tuple)
                                         and any(map(_bigram_cut, node.elt.elts))):
                found["word splitters"].append(f"{node.lineno}: CJK bigrams")
        elif isinstance(node, ast.FunctionDef):
            weighing = [c for c in ast.walk(node)
                        if isinstance(c, ast.Compare) and _weighs_script(c)]
            if weighing:
                found["language detectors"].append(
                    f"{weighing[0].lineno}: {node.name}: {ast.unparse(weighing[0])[:60]}")
    found["CJK ranges"] = [f"{n}: CJK block bounds" for n, line
                           in enumerate(source.splitlines(), 1) if CJK_BOUNDS.search(line)]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=Path("."), help="the checkout to count")
    tree = parser.parse_args().tree
    text = tree / "nodes" / "text"
    inside = dict.fromkeys(CONCEPTS, 0)
    elsewhere: dict[str, list[str]] = {c: [] for c in CONCEPTS}
    for folder in ("modrag_studio", "nodes"):
        for path in sorted((tree / folder).rglob("*.py")):
            for concept, found in hits(path).items():
                if text in path.parents:
                    inside[concept] += len(found)
                else:
                    elsewhere[concept] += [f"{path.relative_to(tree)}:{h}" for h in found]
    for concept in CONCEPTS:
        files = len({h.split(":")[0] for h in elsewhere[concept]})
        print(f"{concept}: {inside[concept]} in the text package, {len(elsewhere[concept])} "
              f"elsewhere (in {files} files)")
        for hit in elsewhere[concept]:
            print(f"  {hit}")


if __name__ == "__main__":
    main()
