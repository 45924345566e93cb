"""Text handling has one home, ``nodes/text``: no CJK character range, language threshold or
stop-word list is spelled out anywhere else, and the package imports nothing of the project
(so every node family and the evaluation may import it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT = ROOT / "nodes" / "text"
#: the first code points of the CJK blocks, as a range or a comparison spells them
CJK_BOUNDS = re.compile(r"\\u(?:4e00|3400|9fff|4dbf|3040|30ff|ac00|d7af|f900|faff)"
                        r"|\\U0002|0x4e00|0x9fff|[\u4e00-\u9fff]-[\u4e00-\u9fff]")
STOP_WORD_FILE = re.compile(r"stopwords_en\.txt")


def _sources() -> list[Path]:
    return [p for folder in (ROOT / "modrag_studio", ROOT / "nodes")
            for p in sorted(folder.rglob("*.py")) if TEXT not in p.parents]


def test_cjk_ranges_live_only_in_the_text_package():
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in _sources()
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if CJK_BOUNDS.search(line) or STOP_WORD_FILE.search(line)]
    assert found == []


def test_the_text_package_imports_nothing_of_the_project():
    wrong = []
    for path in sorted(TEXT.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            wrong += [f"{path.name}:{node.lineno}: {name}" for name in names
                      if name.startswith(("modrag_studio", "modrag_nodes"))
                      and not name.startswith("modrag_nodes.text")]
    assert wrong == []
