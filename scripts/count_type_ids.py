"""Count hard-coded node type ids in the application: string literals equal to a registered
type id (or alias) in modrag_studio/, outside the composition root. Run from the project
folder: ``.venv/bin/python scripts/count_type_ids.py``."""

from __future__ import annotations

import pathlib
import re
import sys

sys.path.insert(0, ".")
from modrag_studio.composition import default_registry  # noqa: E402

LITERAL = re.compile(r"[\"']([a-z_0-9]+\.[a-z_0-9.]+)[\"']")


def main() -> None:
    registry = default_registry()
    ids = {t.type_id for t in registry} | {a for t in registry for a in t.aliases}
    hits: dict[str, list[str]] = {}
    for path in sorted(pathlib.Path("modrag_studio").rglob("*.py")):
        if str(path) == "modrag_studio/composition.py":
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            hits.setdefault(str(path), []).extend(
                m.group(1) for m in LITERAL.finditer(line) if m.group(1) in ids)
    found = {k: v for k, v in hits.items() if v}
    print("hard-coded type ids in the application (outside modrag_studio/composition.py):",
          sum(map(len, found.values())), "in", len(found), "modules")
    for path, names in found.items():
        print(f"  {path}: {len(names)} ({', '.join(sorted(set(names)))})")


if __name__ == "__main__":
    main()
