"""Count hard-coded metric names in the application: string literals equal to a metric the
registry declares (``fact_recall``, ``mean_latency_s``, ``recall@5``, an f-string such as
``f"hit@{k}"``) and the hand-kept lists holding two or more of them (tuples, lists, sets,
dict keys), outside ``modrag_studio/evaluation/metric_registry.py``. Docstrings and longer
texts (help, messages) are not counted.

Run from the project folder: ``.venv/bin/python scripts/count_metric_literals.py [ROOT]
[--bench]``; ROOT (default ``.``) is the tree scanned, e.g. an older commit unpacked with
``git archive``; ``--bench`` scans ``bench/`` too. The metric names are this tree's registry.
"""

from __future__ import annotations

import ast
import pathlib
import sys

sys.path.insert(0, ".")
from modrag_studio.evaluation.metric_registry import METRICS  # noqa: E402

REGISTRY = "modrag_studio/evaluation/metric_registry.py"


def _patterns() -> tuple[set[str], set[str]]:
    plain = {m.name for m in METRICS if m.kind != "ranking"}
    plain |= {f"mean_{m.name}" for m in METRICS if m.kind == "cost"}
    return plain, {f"{m.name}@" for m in METRICS if m.kind == "ranking"}


PLAIN, AT = _patterns()


def is_metric_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        name, at, k = node.value.partition("@")
        return node.value in PLAIN or (f"{name}@" in AT and k.isdigit())
    if isinstance(node, ast.JoinedStr) and len(node.values) == 2:  # f"hit@{k}"
        head = node.values[0]
        return isinstance(head, ast.Constant) and head.value in AT
    return False


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            ids.add(id(body[0].value))
    return ids


def scan(path: pathlib.Path) -> tuple[list[str], int]:
    """The metric literals of one module and how many hand-kept lists hold them."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    skip |= {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
             for part in node.values}
    names, lists = [], 0
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if is_metric_literal(node):
            names.append(ast.unparse(node) if isinstance(node, ast.JoinedStr) else node.value)
        items = (node.keys if isinstance(node, ast.Dict)
                 else node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [])
        if sum(is_metric_literal(item) for item in items if item is not None) >= 2:
            lists += 1
    return names, lists


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = pathlib.Path(args[0] if args else ".")
    folders = ["modrag_studio", *(["bench"] if "--bench" in sys.argv else [])]
    found: dict[str, tuple[list[str], int]] = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = str(path.relative_to(root))
            if rel == REGISTRY:
                continue
            names, lists = scan(path)
            if names:
                found[rel] = (names, lists)
    total = sum(len(n) for n, _ in found.values())
    lists = sum(k for _, k in found.values())
    print(f"metric-name literals outside {REGISTRY}: {total} in {len(found)} modules, "
          f"{lists} hand-kept lists of metric names")
    for path, (names, count) in found.items():
        kept = f", {count} list(s)" if count else ""
        print(f"  {path}: {len(names)}{kept} ({', '.join(sorted(set(names)))})")


if __name__ == "__main__":
    main()
