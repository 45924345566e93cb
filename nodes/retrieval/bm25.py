"""BM25 sparse retrieval: an index node and a query node.

Engines (same tokens, same ``k1``/``b``):

- ``rank-bm25``: ``rank_bm25.BM25Okapi`` (the reference; ``get_scores`` is 30-60 ms a query
  on SciFact's 5,183 abstracts);
- ``fast``: the same BM25Okapi formula, including rank-bm25's floor for negative IDFs
  (``epsilon`` x mean IDF), precomputed as a sparse term x chunk weight matrix; a query sums a
  few rows. Same scores as rank-bm25 (to float rounding), so the same top results;
- ``bm25s``: ``bm25s.BM25(method="robertson")``. Its term-frequency part lacks BM25Okapi's
  constant ``(k1 + 1)`` factor (scores here are multiplied back by it) and it clips negative
  IDFs (terms in more than half of the chunks) to 0 where rank-bm25 uses ``epsilon`` x mean
  IDF, so rankings can differ on queries made of very common terms. bm25s "lucene" and other
  methods use other IDFs and rank differently; they are not offered.

Query variants (``Query.variants``, from query-rewriting nodes) are searched too; ``variants``
picks how: ``max`` keeps each chunk's best BM25 score over the texts (scores stay BM25),
``rrf`` fuses the per-text rankings by reciprocal rank (scores become RRF), ``first`` ignores
the variants.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from modrag_nodes.retrieval.ranking import retriever_id, scored, top_indices, with_ranks
from modrag_nodes.retrieval.tokenizers import StemmerName, StopWords, Tokenizer, TokenizerKind
from modrag_nodes.text.words import WORD_CHARACTERS
from modrag_studio.engine.core.node import (
    Chunk,
    Contract,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
    ScoredChunk,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

Engine = Literal["rank-bm25", "fast", "bm25s"]
TextField = Literal["text", "title+text"]


class _Fitted:
    """Fitted structures of an index: read-only once built, so copies share them."""

    def __init__(self, chunks: list[Chunk], engine: Any) -> None:
        self.chunks = chunks
        self.engine = engine

    def __deepcopy__(self, memo: dict[int, Any]) -> _Fitted:
        return self


class BM25Index(Contract):
    """A fitted BM25 index: the tokenizer, parameters, chunk list and engine structures.

    The index is ``shared_read_only``: the executor hands the same object to every node
    that receives it (copying a large index for each query would dominate a run), so treat
    it, its chunk list and its engine structures as read-only.
    """

    shared_read_only: ClassVar[bool] = True

    tokenizer: Tokenizer = Field(default_factory=Tokenizer)
    engine: Engine = "fast"
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    fields: TextField = "text"
    n_chunks: int = 0
    vocabulary: int = 0
    avg_tokens: float = 0.0
    _fitted: _Fitted | None = PrivateAttr(default=None)

    @classmethod
    def build(cls, chunks: list[Chunk], *, tokenizer: Tokenizer | None = None,
              engine: Engine = "fast", k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25,
              fields: TextField = "text") -> BM25Index:
        if not chunks:
            raise ValueError("cannot build a BM25 index from an empty chunk list")
        tokenizer = tokenizer or Tokenizer()
        corpus = tokenizer.tokenize_many([chunk_text(c, fields) for c in chunks])
        return cls.from_tokens(chunks, corpus, tokenizer=tokenizer, engine=engine, k1=k1, b=b,
                               epsilon=epsilon, fields=fields)

    @classmethod
    def from_tokens(cls, chunks: list[Chunk], corpus: list[list[str]], *, tokenizer: Tokenizer,
                    engine: Engine = "fast", k1: float = 1.5, b: float = 0.75,
                    epsilon: float = 0.25, fields: TextField = "text") -> BM25Index:
        """An index of chunks already tokenized by ``tokenizer`` (one token list per chunk,
        same order), e.g. shards tokenized on several machines and concatenated."""
        if not chunks or len(corpus) != len(chunks):
            raise ValueError(f"need one token list per chunk ({len(chunks)} chunks, "
                             f"{len(corpus)} token lists)")
        fitted = _fit(engine, corpus, k1=k1, b=b, epsilon=epsilon)
        lengths = [len(tokens) for tokens in corpus]
        vocab = len({t for tokens in corpus for t in tokens})
        index = cls(tokenizer=tokenizer, engine=engine, k1=k1, b=b, epsilon=epsilon,
                    fields=fields, n_chunks=len(chunks), vocabulary=vocab,
                    avg_tokens=sum(lengths) / len(lengths))
        index._fitted = _Fitted(list(chunks), fitted)
        return index

    @property
    def chunks(self) -> list[Chunk]:
        return self._require().chunks

    def scores(self, text: str) -> Any:
        """BM25 scores (float64 numpy array, one per chunk) of a query text."""
        return self.scores_for_tokens(self.tokenizer.tokenize(text))

    def scores_for_tokens(self, tokens: list[str]) -> Any:
        import numpy as np

        fitted = self._require()
        if not tokens:
            return np.zeros(len(fitted.chunks))
        if self.engine == "rank-bm25":
            return np.asarray(fitted.engine.get_scores(tokens), dtype=np.float64)
        if self.engine == "bm25s":
            raw = fitted.engine.get_scores(tokens)
            return np.asarray(raw, dtype=np.float64) * (self.k1 + 1)
        return _sparse_scores(fitted.engine, tokens, len(fitted.chunks))

    def search(self, text: str, top_k: int) -> list[tuple[int, float]]:
        """(chunk position, score) of the ``top_k`` best chunks, best first."""
        scores = self.scores(text)
        return [(int(i), float(scores[i])) for i in top_indices(scores, top_k)]

    def _require(self) -> _Fitted:
        if self._fitted is None:
            raise ValueError("this BM25 index holds no fitted structures (build it with "
                             "BM25Index.build or the bm25.index node)")
        return self._fitted

    def preview(self) -> str:
        return (f"BM25 index ({self.engine}): {self.n_chunks} chunks, {self.vocabulary} terms, "
                f"{self.tokenizer.preview()}")


def chunk_text(chunk: Chunk, fields: TextField) -> str:
    """The text indexed for a chunk: its text, or its title (metadata ``title``) and text."""
    if fields == "title+text":
        title = str(chunk.metadata.get("title") or "")
        return f"{title}\n{chunk.text}" if title else chunk.text
    return chunk.text


# engines ---------------------------------------------------------------------------------
def _fit(engine: Engine, corpus: list[list[str]], *, k1: float, b: float,
         epsilon: float) -> Any:
    if engine == "rank-bm25":
        from rank_bm25 import BM25Okapi

        return BM25Okapi(corpus, k1=k1, b=b, epsilon=epsilon)
    if engine == "bm25s":
        import bm25s

        model = bm25s.BM25(method="robertson", k1=k1, b=b)
        model.index(corpus, show_progress=False)
        return model
    return _fit_sparse(corpus, k1=k1, b=b, epsilon=epsilon)


def _fit_sparse(corpus: list[list[str]], *, k1: float, b: float, epsilon: float) -> dict:
    """Term x chunk weights ``idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``
    in CSR form, with rank-bm25's IDF (negative IDFs become ``epsilon`` x mean IDF)."""
    import numpy as np

    vocab: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    tfs: list[int] = []
    lengths = np.array([len(tokens) for tokens in corpus], dtype=np.float64)
    for doc, tokens in enumerate(corpus):
        for term, tf in Counter(tokens).items():
            rows.append(vocab.setdefault(term, len(vocab)))
            cols.append(doc)
            tfs.append(tf)
    n_docs = len(corpus)
    row_arr = np.asarray(rows, dtype=np.int64)
    col_arr = np.asarray(cols, dtype=np.int64)
    tf_arr = np.asarray(tfs, dtype=np.float64)
    df = np.bincount(row_arr, minlength=len(vocab)).astype(np.float64)
    idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
    if len(idf):
        floor = epsilon * (idf.sum() / len(idf))
        idf = np.where(idf < 0, floor, idf)
    avgdl = lengths.sum() / n_docs if lengths.sum() else 1.0
    norm = k1 * (1 - b + b * lengths[col_arr] / avgdl)
    weights = idf[row_arr] * (tf_arr * (k1 + 1) / (tf_arr + norm))
    order = np.lexsort((col_arr, row_arr))
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_arr, minlength=len(vocab)), out=indptr[1:])
    return {"vocab": vocab, "indptr": indptr, "indices": col_arr[order],
            "data": weights[order]}


def _sparse_scores(fitted: dict, tokens: list[str], n_docs: int) -> Any:
    import numpy as np

    scores = np.zeros(n_docs, dtype=np.float64)
    vocab, indptr, indices, data = (fitted["vocab"], fitted["indptr"], fitted["indices"],
                                    fitted["data"])
    for term, count in Counter(tokens).items():
        row = vocab.get(term)
        if row is None:
            continue
        start, end = indptr[row], indptr[row + 1]
        scores[indices[start:end]] += count * data[start:end]
    return scores


# nodes -----------------------------------------------------------------------------------
class BM25IndexParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    engine: Engine = Field("fast", description="fast (sparse matrix, same results as "
                           "rank-bm25), rank-bm25 (reference), or bm25s (robertson)")
    k1: float = Field(1.5, ge=0, le=10, description="Term-frequency saturation")
    b: float = Field(0.75, ge=0, le=1, description="Length normalisation")
    epsilon: float = Field(0.25, ge=0, le=1,
                           description="Floor of negative IDFs, as a fraction of the mean IDF")
    tokenizer: TokenizerKind = Field("regex", description="regex words, jieba (Chinese "
                                     "words) or bigram (Chinese character bigrams)")
    lowercase: bool = Field(True, description="Lower-case text before tokenizing")
    stopwords: StopWords = Field("none", description="Drop English stop words")
    stemmer: StemmerName = Field("none", description="Snowball stemmer (PyStemmer)")
    pattern: str = Field(WORD_CHARACTERS.pattern,
                         description="Token pattern of the regex tokenizer")
    fields: TextField = Field("text", description="Index the chunk text, or its title "
                              "(metadata 'title') and text")


class BM25IndexNode(NodeType):
    type_id = "bm25.index"
    key_params = ("tokenizer", "k1", "b")
    evidence_role = EvidenceRole("indexes")
    title = "BM25 index"
    category = "Indexing"
    description = ("Tokenizes chunks and fits a BM25 index (rank-bm25 or a fast sparse "
                   "engine with the same results).")
    Params = BM25IndexParams
    inputs = (InputPort("chunks", list[Chunk], description="Chunks to index"),)
    outputs = (OutputPort("index", BM25Index, "Fitted index with its tokenizer"),)
    isolate_inputs = False  # only reads the chunks; the index shares them with the upstream

    def run(self, ctx: NodeContext, params: BM25IndexParams,
            chunks: list[Chunk]) -> dict[str, Any]:
        if not chunks:
            raise NodeConfigError("input 'chunks' is empty: nothing to index")
        tokenizer = Tokenizer(kind=params.tokenizer, lowercase=params.lowercase,
                              stopwords=params.stopwords, stemmer=params.stemmer,
                              pattern=params.pattern)
        try:
            tokenizer.tokenize("probe")
        except ValueError as exc:
            raise NodeConfigError(f"param 'pattern': {exc}") from exc
        ctx.progress(0, 1, f"tokenizing {len(chunks)} chunks")
        index = BM25Index.build(chunks, tokenizer=tokenizer, engine=params.engine,
                                k1=params.k1, b=params.b, epsilon=params.epsilon,
                                fields=params.fields)
        ctx.progress(1, 1, "indexed")
        ctx.note(engine=params.engine, chunks=index.n_chunks, vocabulary=index.vocabulary,
                 avg_tokens=round(index.avg_tokens, 1), tokenizer=tokenizer.preview())
        if index.avg_tokens == 0:
            ctx.warn("no chunk produced any token: check the tokenizer settings")
        return {"index": index}


class BM25RetrieveParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    top_k: int = Field(10, ge=1, le=100_000, description="How many chunks to return")
    variants: Literal["max", "rrf", "first"] = Field(
        "max", description="Query variants: best BM25 score per chunk (max), reciprocal "
        "rank fusion of the per-text rankings (rrf), or the query text only (first)")
    rrf_k: int = Field(60, ge=1, description="RRF constant when variants='rrf'")
    drop_zero: bool = Field(True, description="Leave out chunks sharing no term with the query")
    label: str = Field("", description="Retriever id in results (default: the node id)")


class BM25Retrieve(NodeType):
    type_id = "retrieve.bm25"
    span_kind = "retriever"
    key_params = ("top_k",)
    evidence_role = EvidenceRole("retrieves", top_param="top_k", noun="keyword search")
    title = "BM25 retriever"
    category = "Retrieval"
    description = "Ranks the indexed chunks by BM25 score for a query (and its variants)."
    Params = BM25RetrieveParams
    inputs = (InputPort("index", BM25Index, description="From a BM25 index node"),
              InputPort("query", Query, description="The question (text works too)"))
    outputs = (OutputPort("results", list[ScoredChunk], "Best chunks, best first"),)

    def run(self, ctx: NodeContext, params: BM25RetrieveParams, index: BM25Index,
            query: Query) -> dict[str, Any]:
        texts = query.all_texts() if params.variants != "first" else [query.text]
        texts = texts or [query.text]
        label = retriever_id(ctx, params.label)
        results = search_texts(index, texts, top_k=params.top_k, mode=params.variants,
                               rrf_k=params.rrf_k, drop_zero=params.drop_zero)
        tokens = index.tokenizer.tokenize(query.text)
        if not tokens:
            ctx.warn(f"the query {query.text!r} has no token under {index.tokenizer.preview()}")
        ctx.note(texts=len(texts), query_tokens=tokens[:50], returned=len(results),
                 variants=params.variants)
        return {"results": with_ranks(results, label)}


def search_texts(index: BM25Index, texts: list[str], *, top_k: int,
                 mode: str = "max", rrf_k: int = 60,
                 drop_zero: bool = True) -> list[ScoredChunk]:
    """Ranked chunks for one or more query texts (see the module docstring for ``mode``)."""
    import numpy as np

    matrix = np.vstack([index.scores(text) for text in texts])
    matched = (matrix > 0).any(axis=0) if drop_zero else np.ones(matrix.shape[1], dtype=bool)
    if mode == "rrf" and len(texts) > 1:
        fused = np.zeros(matrix.shape[1])
        for row in matrix:
            order = top_indices(row, matrix.shape[1])
            if drop_zero:
                order = order[row[order] > 0]
            fused[order] += 1.0 / (rrf_k + np.arange(1, len(order) + 1))
        scores, kind = fused, "rrf"
    else:
        scores, kind = matrix.max(axis=0), "bm25"
    scores = np.where(matched, scores, -np.inf)
    picked = [i for i in top_indices(scores, top_k) if matched[i]]
    chunks = index.chunks  # shared, like the index: nodes downstream get private copies
    return [scored(chunks[i], float(scores[i]), score_kind=kind) for i in picked]
