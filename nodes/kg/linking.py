"""``kg.link``: find the graph nodes a question mentions.

Four methods, in order, each on the text the earlier ones left: exact names and aliases
(confidence 1.0 / 0.95), normalised n-grams (``cnc a01`` meets ``CNC-A01``, 0.9), fuzzy string
similarity with rapidfuzz (0.9 x similarity), and, when an embedder is connected, cosine
similarity between candidate mentions and node names (0.9 x cosine). Candidate mentions that
nothing matched (identifiers, capitalised phrases, quoted text) are reported as unlinked.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_nodes.kg.aliases import display, normalize
from modrag_nodes.kg.contracts import EntityLink, EntityLinks, KnowledgeGraph
from modrag_nodes.kg.extract_rules import _alternation
from modrag_nodes.kg.store import KGStore, load_store
from modrag_nodes.text.scripts import HAN
from modrag_nodes.text.stopwords import word_list
from modrag_nodes.text.words import LATIN_WORD_ANY_CASE
from modrag_studio.engine.core.node import (
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
    Resources,
)

if TYPE_CHECKING:
    import numpy as np

# English function and question words only: words of a corpus's own questions ("service",
# "mentor", "upstream") go in the node's 'stop_words' param.
STOP_WORDS = word_list("function_words_en")
_CAPITALISED = re.compile(r"\b[A-Z][\w\-]*(?:\s+(?:[A-Z][\w\-]*|of|de|von))*")
_IDENTIFIER = re.compile(r"\b[A-Za-z]+[0-9]*(?:[-_.][A-Za-z0-9]+)+\b|\b[A-Z]+[0-9]+[A-Z0-9]*\b")
_QUOTED = re.compile(r"[\"“'‘「『]([^\"”'’」』]{2,60})[\"”'’」』]")
_HAN_RUN = re.compile(f"[{HAN}]{{2,}}")


class LinkParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fuzzy_threshold: float = Field(85, ge=50, le=100,
                                   description="rapidfuzz similarity (0-100) a fuzzy match needs")
    embedding_threshold: float = Field(0.8, ge=0, le=1,
                                       description="Cosine an embedding match needs")
    min_confidence: float = Field(0.5, ge=0, le=1, description="Links below are dropped")
    max_links: int = Field(10, ge=1, le=100, description="Keep at most this many links")
    stop_words: list[str] = Field(
        default_factory=list, description="More words that never start or end a mention "
                                          "(the corpus's own generic words: service, mentor)")


def _matcher(store: KGStore) -> re.Pattern[str] | None:
    if "_link_matcher" not in store.__dict__:
        surfaces = list(store.aliases.surfaces()) + [str(n) for n in store.graph.nodes]
        store.__dict__["_link_matcher"] = _alternation(surfaces)
    return store.__dict__["_link_matcher"]


def _covered(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(s < end and start < e for s, e in spans)


def _ngrams(text: str, spans: list[tuple[int, int]], longest: int = 4,
            stop: frozenset[str] = STOP_WORDS) -> list[tuple[str, int, int]]:
    """Word n-grams (longest first) outside the spans, without stop-word-only grams."""
    words = [m for m in LATIN_WORD_ANY_CASE.finditer(text)
             if not _covered(spans, m.start(), m.end())]
    grams = []
    for size in range(min(longest, len(words)), 0, -1):
        for i in range(len(words) - size + 1):
            group = words[i:i + size]
            if any(b.start() - a.end() > 2 for a, b in zip(group, group[1:], strict=False)):
                continue
            if all(w.group().lower() in stop for w in group):
                continue
            if group[0].group().lower() in stop or group[-1].group().lower() in stop:
                continue
            start, end = group[0].start(), group[-1].end()
            grams.append((text[start:end], start, end))
    for run in _HAN_RUN.finditer(text):
        if not _covered(spans, run.start(), run.end()):
            grams.append((run.group(), run.start(), run.end()))
    return grams


def candidate_mentions(text: str, stop: frozenset[str] = STOP_WORDS
                       ) -> list[tuple[str, int, int]]:
    """Spans that look like names: identifiers, capitalised phrases, quoted text."""
    found = []
    for pattern in (_IDENTIFIER, _CAPITALISED, _QUOTED):
        for m in pattern.finditer(text):
            group = 1 if pattern is _QUOTED else 0
            words = m.group(group).split()
            while words and words[0].lower() in stop:
                words = words[1:]
            if words and " ".join(words).lower() not in stop:
                phrase = " ".join(words)
                start = m.start(group) + m.group(group).find(phrase)
                found.append((phrase, start, start + len(phrase)))
    return found


def link_entities(question: str, store: KGStore, *, fuzzy_threshold: float = 85,
                  embedder: EmbedderSpec | None = None, embedding_threshold: float = 0.8,
                  min_confidence: float = 0.5, max_links: int = 10,
                  ctx: NodeContext | None = None, stop_words: Iterable[str] = ()
                  ) -> EntityLinks:
    text = unicodedata.normalize("NFKC", question)
    stop = STOP_WORDS | {w.lower() for w in stop_words}
    links: list[EntityLink] = []
    spans: list[tuple[int, int]] = []

    def add(mention: str, node: str, method: str, confidence: float, start: int, end: int
            ) -> None:
        spans.append((start, end))
        if confidence >= min_confidence and all(x.node != node for x in links):
            links.append(EntityLink(mention=mention, node=node, method=method,
                                    confidence=round(confidence, 4)))

    matcher = _matcher(store)
    if matcher is not None:
        for m in matcher.finditer(text):
            node = store.resolve(m.group()) or store.resolve(display(m.group()))
            if node is not None:
                exact = normalize(m.group()) == normalize(node)
                add(m.group(), node, "exact" if exact else "alias", 1.0 if exact else 0.95,
                    m.start(), m.end())
    for gram, start, end in _ngrams(text, spans, stop=stop):
        if not _covered(spans, start, end) and (node := store.aliases.lookup(gram)):
            add(gram, node, "alias", 0.9, start, end)
    _fuzzy(text, store, spans, fuzzy_threshold, add, stop)
    candidates = [c for c in candidate_mentions(text, stop)
                  if not _covered(spans, c[1], c[2])]
    if embedder is not None and candidates:
        _by_embedding(store, candidates, embedder, embedding_threshold, add, ctx)
    unlinked = []
    for phrase, start, end in candidates:
        if not _covered(spans, start, end) and phrase not in unlinked:
            unlinked.append(phrase)
    links.sort(key=lambda x: -x.confidence)
    return EntityLinks(question=question, links=links[:max_links], unlinked=unlinked)


def _fuzzy(text: str, store: KGStore, spans: list[tuple[int, int]], threshold: float,
           add: Any, stop: frozenset[str] = STOP_WORDS) -> None:
    from rapidfuzz import fuzz, process

    keys = list(store.aliases.to_dict())
    normalised = [normalize(k) for k in keys]
    if not keys:
        return
    for gram, start, end in _ngrams(text, spans, stop=stop):
        key = normalize(gram)
        if len(key) < 4 or _covered(spans, start, end):
            continue
        best = process.extractOne(key, normalised, scorer=fuzz.ratio, score_cutoff=threshold)
        if best is not None:
            node = store.aliases.lookup(keys[best[2]])
            if node is not None:
                add(gram, node, "fuzzy", 0.9 * best[1] / 100, start, end)


def _by_embedding(store: KGStore, candidates: list[tuple[str, int, int]], spec: EmbedderSpec,
                  threshold: float, add: Any, ctx: NodeContext | None) -> None:
    import numpy as np

    cache: dict[str, tuple[list[str], Any]] = store.__dict__.setdefault("_name_vectors", {})
    if spec.model_id not in cache:
        names = [str(n) for n in store.graph.nodes]
        vectors = embed_texts(spec, names, role="passage", ctx=ctx) if names else []
        cache[spec.model_id] = (names, _unit(vectors) if names else None)
    names, matrix = cache[spec.model_id]
    if not names:
        return
    queries = _unit(embed_texts(spec, [c[0] for c in candidates], role="query", ctx=ctx))
    sims = queries @ matrix.T
    for (phrase, start, end), row in zip(candidates, sims, strict=True):
        best = int(np.argmax(row))
        if row[best] >= threshold:
            add(phrase, names[best], "embedding", 0.9 * float(row[best]), start, end)


def _unit(vectors: Any) -> np.ndarray:
    import numpy as np

    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms == 0, 1, norms)


def store_of(graph: KnowledgeGraph, resources: Resources, port: str = "graph") -> KGStore:
    """The store of ``graph`` (a node's input ``port``), kept in the run's ``resources``."""
    try:
        return load_store(graph.path, resources)
    except ValueError as exc:
        raise NodeConfigError(f"input '{port}': {exc}") from exc


class LinkEntities(NodeType):
    type_id = "kg.link"
    key_params = ("min_confidence",)
    title = "Link entities"
    category = "Knowledge graph"
    description = ("Finds the graph nodes a question mentions: exact, alias, fuzzy and "
                   "(with an embedder) embedding matches, each with a confidence.")
    Params = LinkParams
    inputs = (
        InputPort("query", Query, description="The question"),
        InputPort("graph", KnowledgeGraph, description="The knowledge graph"),
        InputPort("embedder", EmbedderSpec, required=False,
                  description="Adds embedding similarity over node names"),
    )
    outputs = (OutputPort("links", EntityLinks, "Linked nodes and unlinked mentions"),)

    def run(self, ctx: NodeContext, params: LinkParams, query: Query, graph: KnowledgeGraph,
            embedder: EmbedderSpec | None = None) -> dict[str, Any]:
        store = store_of(graph, ctx.resources)
        result = link_entities(query.text, store, ctx=ctx, embedder=embedder,
                               fuzzy_threshold=params.fuzzy_threshold,
                               embedding_threshold=params.embedding_threshold,
                               min_confidence=params.min_confidence, max_links=params.max_links,
                               stop_words=params.stop_words)
        ctx.note(links=[f"{x.mention} -> {x.node} ({x.method} {x.confidence})"
                        for x in result.links], unlinked=result.unlinked)
        return {"links": result}
