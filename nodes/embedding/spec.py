"""``embed_texts`` runs an ``EmbedderSpec`` (``embedding.embedder``: which model to use).

Retrievers, the query-transform drift guard, entity linking and semantic splitting all embed
through this one function, so a model is loaded once per process and shared.
"""

from __future__ import annotations

from typing import Any, Literal

from modrag_nodes.calls import cassette
from modrag_nodes.embedding.embedder import EmbedderSpec
from modrag_nodes.embedding.models import embed
from modrag_studio.engine.core.node import NodeContext, Resources


def embed_texts(
    spec: EmbedderSpec,
    texts: list[str],
    *,
    role: Literal["query", "passage"] = "passage",
    ctx: NodeContext | None = None,
    resources: Resources | None = None,
) -> Any:
    """Embed ``texts`` as a float32 numpy array of shape (len(texts), dim).

    Batched; reports progress and checks cancellation between batches through ``ctx``; the
    model is kept in ``ctx.resources`` (else ``resources``, else the process's).
    While a cassette recording embedder calls is active, the call is recorded or replayed.
    """
    if (tape := cassette.active("embed")) is not None:
        return tape.embed(spec, texts, role, lambda: embed(spec, texts, role=role, ctx=ctx,
                                                              resources=resources),
                          node=ctx.node_id if ctx is not None else "")
    return embed(spec, texts, role=role, ctx=ctx, resources=resources)
