"""The one decision every entry point takes before running a graph file (the studio's Run,
Run set, Compare and Index, ``modrag run``/``eval``/``index``): may it run without asking?

A graph runs without asking when it is the user's own (not saved to a file yet, or saved,
run or approved here and unchanged since), when it is one of the samples, or when it reaches
nothing outside its folder. Otherwise the front end shows ``reach`` (what it reads outside
its folder, the hosts it contacts, the variables it reads) and runs it only after consent:
the studio asks, the command line needs ``--trust``. Consent approves its hosts and makes
the file the user's own (``accept``).
"""

from __future__ import annotations

import os
from pathlib import Path

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.trust.reach import Reach, approve_host, is_trusted, reach, trust

SAMPLES = Path(__file__).resolve().parents[3] / "sample_graphs"


def exempt(path: str | Path | None) -> bool:
    """True for a graph that is the user's own or a sample: it never asks."""
    if path is None or not Path(path).is_file() or is_trusted(path):
        return True
    return Path(os.path.realpath(path)).parent == SAMPLES.resolve()


def disclosure(doc: GraphDocument, registry: NodeRegistry, path: str | Path | None, *,
               base: Path | None = None) -> Reach | None:
    """None when ``doc`` (read from ``path``) may run without asking; else what it reaches,
    resolved as the run resolves it (empty: it reaches nothing, so it may run too)."""
    if exempt(path):
        return None
    return reach(doc, registry, path, base=base)


def accept(path: str | Path, found: Reach) -> None:
    """The user consented: approve the hosts it contacts, and trust the file as it is."""
    for _, host in found.hosts:
        approve_host(host)
    trust(path)


def refusal(path: str | Path, found: Reach, how: str) -> str:
    """The message of a front end that does not run an untrusted graph without consent."""
    shown = found.lines()
    more = [f"... and {len(shown) - 20} more"] if len(shown) > 20 else []
    lines = "\n".join(f"  {line}" for line in shown[:20] + more)
    return (f"{Path(path).name} was not made or run here, and it reaches outside its folder:\n"
            f"{lines}\nCheck these, then {how}.")
