"""The one decision every entry point takes before running a graph file (the studio's Run,
Run set, Compare, Index and Generate, ``modrag run``/``eval``/``compare``/``tune``/``index``/
``evalset``/``mcp``): may it run without asking? It is taken on what the entry point is about
to execute (``run_reach``): the document with a stored or command-line variant applied,
compare's second graph, a tuner's trials; ``reach`` adds every stored variant and component
link of each.

A graph runs without asking when it is the user's own (not saved to a file yet, or saved,
run or approved here and unchanged since), when it is one of the samples, or when it reaches
nothing outside its folder. Otherwise the front end shows ``reach`` (what it reads outside
its folder, the hosts it contacts, the variables it reads) and runs it only after consent:
the studio asks, the command line needs ``--trust``. Consent approves its hosts and makes
the file the user's own (``accept``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.formatting import shown
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.trust.reach import Reach, approve_host, is_trusted, reach, trust

SAMPLES = Path(__file__).resolve().parents[3] / "sample_graphs"


def exempt(path: str | Path | None) -> bool:
    """True for a graph that is the user's own or a sample: it never asks."""
    if path is None or not Path(path).is_file() or is_trusted(path):
        return True
    return Path(os.path.realpath(path)).parent == SAMPLES.resolve()


def run_reach(executed: GraphDocument | Iterable[GraphDocument], registry: NodeRegistry,
              path: str | Path | None, *, base: Path | None = None) -> Reach:
    """What running ``executed`` (one document, or every document an entry point runs from
    the file at ``path``) reaches outside the folder of ``path``, each entry listed once."""
    docs = [executed] if isinstance(executed, GraphDocument) else list(executed)
    found = Reach()
    for doc in docs:
        found.add(reach(doc, registry, path, base=base))
    return found


def disclosure(executed: GraphDocument | Iterable[GraphDocument], registry: NodeRegistry,
               path: str | Path | None, *, base: Path | None = None) -> Reach | None:
    """None when the file at ``path`` may run as ``executed`` without asking; else what
    ``executed`` reaches (``run_reach``; empty: nothing, so it may run too)."""
    if exempt(path):
        return None
    return run_reach(executed, registry, path, base=base)


def accept(path: str | Path, found: Reach) -> None:
    """The user consented: approve the hosts it contacts, and trust the file as it is."""
    for _, host in found.hosts:
        approve_host(host)
    trust(path)


def refusal(path: str | Path, found: Reach, how: str) -> str:
    """The message of a front end that does not run an untrusted graph without consent."""
    listed = found.lines()
    more = [f"... and {len(listed) - 20} more"] if len(listed) > 20 else []
    lines = "\n".join(f"  {line}" for line in listed[:20] + more)
    return (f"{shown(Path(path).name)} was not made or run here, and it reaches outside its "
            f"folder:\n{lines}\nCheck these, then {how}.")
