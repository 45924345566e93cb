"""What the evaluation dialogs' forms start from: the default of a graph input and the
input taking the corpus folder (their long work is a ``ui.jobs`` background job)."""

from __future__ import annotations

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.graph_io import graph_interface


def input_default(doc: GraphDocument, input_name: str | None) -> str:
    """The default value of the graph input ``input_name`` ('' when it has none)."""
    from modrag_studio.composition import default_registry

    port = graph_interface(doc, default_registry()).input_named(input_name)
    return port.default or "" if port is not None else ""


def corpus_input_name(doc: GraphDocument) -> str | None:
    """The graph input taking the corpus folder (None: the graph has none)."""
    from modrag_studio.composition import default_registry
    from modrag_studio.evaluation.runner import pick_inputs

    try:
        return pick_inputs(doc, None, None, default_registry())[1]
    except Exception:  # no query input: the corpus input alone is what matters here
        names = graph_interface(doc, default_registry()).input_names
        return next((n for n in names if n in ("corpus", "corpus_path")), None)
