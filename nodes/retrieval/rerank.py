"""Rerankers: a sentence-transformers cross-encoder, FlagEmbedding's reranker (optional
extra) and an embedding-cosine reranker that works offline with the packaged embedder.

All three take a query and candidate chunks, score every candidate and keep the ``top_n``
best. Each result keeps its earlier ranks in ``sources`` (the input list is recorded under its
retriever id) and adds the reranker's own. ``uncut`` holds every candidate in the new order
(``results`` is its first ``top_n``), so the evidence debugger can say where a dropped chunk
went ("dropped, was #5, now #11"). When scoring fails (model missing, package missing,
out of memory) the node passes the input order through, sets its ``reranked`` output to
false, says why in the trace and the run goes on; such a result is not cached, so the next run
tries again. Set ``on_error="raise"`` to make the failure stop the run instead.

Models are never downloaded here: a model is a local folder or a name already in the local
Hugging Face cache; anything else fails at once with a message naming it.
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_nodes.retrieval.ranking import list_id, remember_input, retriever_id, with_ranks
from modrag_nodes.vectorstore.contracts import VectorIndex
from modrag_studio.engine.core.node import (
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
    Resources,
    RunCancelled,
    ScoredChunk,
    given_or_process,
    parameter_bytes,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole, UncutRanking

DEFAULT_RERANKER = "BAAI/bge-reranker-v2-m3"
FLAG_INSTALL = ("pip install 'modrag-studio[flag]' (FlagEmbedding needs transformers<5, so "
                "install it in an environment of its own)")
Scorer = Callable[[str, list[str]], list[float]]



class RerankFailed(RuntimeError):
    """The reranker could not score the candidates (the message says why)."""


# model loading ---------------------------------------------------------------------------
def resolve_model(name: str) -> str:
    """A local folder for ``name``: the folder itself, or its snapshot in the local Hugging
    Face cache. Never downloads; raises ``NodeConfigError`` naming the model otherwise."""
    name = name.strip()
    if not name:
        raise NodeConfigError("param 'model' is empty: give a model folder or name")
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path.resolve())
    if path.is_absolute() or name.startswith((".", "~")) or name.count("/") > 1:
        raise NodeConfigError(f"param 'model': reranker model folder '{name}' does not exist")
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name, local_files_only=True)
    except Exception as exc:
        raise NodeConfigError(
            f"reranker model '{name}' is not a local folder and not in the local Hugging Face "
            f"cache; nothing is downloaded at run time: download it beforehand "
            f"(hf download {name}) or set param 'model' to a folder") from exc


def _cached_model(resources: Resources | None, key: tuple[Any, ...], load: Callable[[], Any]
                  ) -> Any:
    return given_or_process(resources).model(
        "reranker", key, load, name=" ".join(map(str, key)),
        size=lambda m: parameter_bytes(getattr(m, "model", m)))


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def load_cross_encoder(model: str, *, max_length: int, device: str = "cpu",
                       resources: Resources | None = None) -> Any:
    """A sentence-transformers ``CrossEncoder`` from a folder or the local cache, kept in
    ``resources`` (the run's; the process's when None)."""
    folder = resolve_model(model)

    def load() -> Any:
        _offline()
        from sentence_transformers import CrossEncoder

        try:
            return CrossEncoder(folder, device=device, max_length=max_length,
                                local_files_only=True)
        except Exception as exc:
            raise NodeConfigError(f"reranker model '{model}' could not be loaded as a "
                                  f"cross-encoder from {folder}: {exc}") from exc

    return _cached_model(resources, ("cross-encoder", folder, device, max_length), load)


def load_flag_reranker(model: str, *, use_fp16: bool, max_length: int,
                       resources: Resources | None = None) -> Any:
    """FlagEmbedding's ``FlagReranker`` (the optional ``flag`` extra), kept in ``resources``
    (the run's; the process's when None)."""
    try:
        from FlagEmbedding import FlagReranker
    except ImportError as exc:
        raise NodeConfigError(f"rerank.flag needs FlagEmbedding: {FLAG_INSTALL} "
                              f"({type(exc).__name__}: {exc})") from exc
    except Exception as exc:  # installed but incompatible (transformers 5)
        raise NodeConfigError(f"FlagEmbedding is installed but cannot be imported "
                              f"({type(exc).__name__}: {exc}); {FLAG_INSTALL}") from exc
    folder = resolve_model(model)

    def load() -> Any:
        _offline()
        return FlagReranker(folder, use_fp16=use_fp16, max_length=max_length)

    return _cached_model(resources, ("flag", folder, use_fp16, max_length), load)


# the shared rerank procedure -------------------------------------------------------------
def rerank(query: str, candidates: list[ScoredChunk], scorer: Scorer, *, top_n: int,
           kind: str, label: str, source: str | None = None) -> list[ScoredChunk]:
    """Score ``candidates`` with ``scorer(query, texts)``, sort best first, keep ``top_n``.

    The input rank and score of each candidate are kept under ``sources[source]`` (default:
    the candidates' retriever id). Raises ``RerankFailed`` when the scorer fails.
    """
    return rerank_all(query, candidates, scorer, kind=kind, label=label, source=source)[:top_n]


def rerank_all(query: str, candidates: list[ScoredChunk], scorer: Scorer, *, kind: str,
               label: str, source: str | None = None) -> list[ScoredChunk]:
    """Every candidate re-scored and ranked, best first (``rerank`` without the cut)."""
    items = list(candidates)
    remember_input(items, source or list_id(items, 0))
    if not items:
        return []
    try:
        scores = [float(s) for s in scorer(query, [item.chunk.text for item in items])]
    except (RunCancelled, NodeConfigError, RerankFailed):
        raise
    except Exception as exc:
        raise RerankFailed(f"{type(exc).__name__}: {exc}") from exc
    if len(scores) != len(items):
        raise RerankFailed(f"the model gave {len(scores)} scores for {len(items)} candidates")
    if not all(math.isfinite(s) for s in scores):
        raise RerankFailed("the model gave non-finite scores")
    rescored = [item.model_copy(update={"score": s, "score_kind": kind,
                                        "higher_is_better": True})
                for item, s in zip(items, scores, strict=True)]
    rescored.sort(key=lambda item: -item.score)
    return with_ranks(rescored, label)


class _RerankParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    top_n: int = Field(10, ge=1, le=10_000, description="Keep this many chunks")
    on_error: Literal["pass_through", "raise"] = Field(
        "pass_through", description="On failure: pass the input order through (and say so) "
        "or stop the run")
    label: str = Field("", description="Retriever id in results (default: the node id)")


class _Reranker(NodeType):
    """Common run logic: build a scorer, rerank, fall back to the input order on failure."""

    span_kind = "reranker"
    evidence_role = EvidenceRole("reorders", top_param="top_n", uncut_port="uncut")
    category = "Fusion & rerank"
    score_kind: str = "similarity"
    inputs = (InputPort("query", Query, description="The question (text works too)"),
              InputPort("candidates", list[ScoredChunk], description="Chunks to rerank"))
    outputs = (OutputPort("results", list[ScoredChunk], "Reranked chunks, best first"),
               OutputPort("reranked", bool, "False when the input order was passed through"),
               OutputPort("uncut", UncutRanking, "Every candidate in the new order, "
                          "before the top_n cut"))

    def __init__(self) -> None:
        self._local = threading.local()

    def scorer(self, ctx: NodeContext, params: Any) -> tuple[Scorer, str]:
        """(scorer, score kind) for these params; may raise to signal a failure."""
        raise NotImplementedError

    def is_cacheable(self, params: Any) -> bool:
        # The executor asks before and after ``run``: a pass-through answer is not stored.
        failed = getattr(self._local, "failed", False)
        self._local.failed = False
        return not failed

    def run(self, ctx: NodeContext, params: Any, query: Query,
            candidates: list[ScoredChunk]) -> dict[str, Any]:
        self._local.failed = False
        label = retriever_id(ctx, params.label)
        candidates = list(candidates or [])
        source = list_id(candidates, 0)
        ctx.note(candidates=len(candidates), top_n=params.top_n)
        try:
            scorer, kind = self.scorer(ctx, params)
            ranked = rerank_all(query.text, candidates, scorer, kind=kind, label=label,
                                source=source)
        except RunCancelled:
            raise
        except (NodeConfigError, RerankFailed) as exc:
            if params.on_error == "raise":
                raise
            return self._pass_through(ctx, params, candidates, label, source, exc)
        ctx.note(reranked=True, score_kind=kind)
        return {"results": ranked[: params.top_n], "reranked": True,
                "uncut": UncutRanking(items=ranked, cut=params.top_n)}

    def _pass_through(self, ctx: NodeContext, params: Any, candidates: list[ScoredChunk],
                      label: str, source: str, exc: BaseException) -> dict[str, Any]:
        self._local.failed = True
        reason = str(exc)
        ctx.warn(f"reranking failed, passing the input order through: {reason}")
        ctx.note(reranked=False, reason=reason)
        remember_input(candidates, source)
        ranked = with_ranks(candidates, label, record=False)
        return {"results": ranked[: params.top_n], "reranked": False,
                "uncut": UncutRanking(items=ranked, cut=params.top_n)}


def _batched(score_batch: Callable[[list[tuple[str, str]]], Any], ctx: NodeContext,
             batch_size: int) -> Scorer:
    def score(query: str, texts: list[str]) -> list[float]:
        pairs = [(query, text) for text in texts]
        out: list[float] = []
        batches = -(-len(pairs) // batch_size)
        for start in range(0, len(pairs), batch_size):
            ctx.check_cancelled()
            batch = pairs[start:start + batch_size]
            try:
                values = score_batch(batch)
            except (RunCancelled, NodeConfigError):
                raise
            except Exception as exc:
                raise RerankFailed(
                    f"batch {start // batch_size + 1} of {batches} (candidates {start + 1}-"
                    f"{start + len(batch)}) failed: {type(exc).__name__}: {exc}") from exc
            out.extend(_flat_scores(values))
            ctx.progress(min(start + batch_size, len(pairs)), len(pairs), "reranking")
        return out

    return score


def _flat_scores(values: Any) -> list[float]:
    import numpy as np

    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim == 0:
        array = array.reshape(1)
    if array.ndim != 1:
        raise RerankFailed(f"the model gives {array.shape[-1]} labels per pair; a reranker "
                           "must give one score")
    return array.tolist()


# nodes -----------------------------------------------------------------------------------
class CrossEncoderParams(_RerankParams):
    model: str = Field(DEFAULT_RERANKER, description="Cross-encoder folder or Hugging Face "
                       "name (must already be downloaded)")
    scores: Literal["probability", "logit"] = Field(
        "probability", description="Sigmoid of the model output (0..1), or the raw logit")
    max_length: int = Field(512, ge=16, le=8192, description="Max tokens of a query+chunk pair")
    batch_size: int = Field(16, ge=1, le=1024)
    device: str = Field("cpu", description="Torch device")


class CrossEncoderRerank(_Reranker):
    type_id = "rerank.cross_encoder"
    key_params = ("top_n", "model")
    title = "Cross-encoder reranker"
    description = ("Rescores candidates with a sentence-transformers CrossEncoder (e.g. "
                   "BAAI/bge-reranker-v2-m3); passes the input order through on failure.")
    Params = CrossEncoderParams

    def health(self, params: CrossEncoderParams) -> str | None:
        return f"cross-encoder {params.model} at {resolve_model(params.model)}"

    def scorer(self, ctx: NodeContext, params: CrossEncoderParams) -> tuple[Scorer, str]:
        model = load_cross_encoder(params.model, max_length=params.max_length,
                                   device=params.device, resources=ctx.resources)
        import torch

        activation = torch.nn.Sigmoid() if params.scores == "probability" else torch.nn.Identity()

        def batch(pairs: list[tuple[str, str]]) -> Any:
            return model.predict(pairs, batch_size=len(pairs), activation_fn=activation,
                                 show_progress_bar=False, convert_to_numpy=True)

        return _batched(batch, ctx, params.batch_size), params.scores


class FlagParams(_RerankParams):
    model: str = Field(DEFAULT_RERANKER, description="Reranker folder or Hugging Face name "
                       "(must already be downloaded)")
    normalize: bool = Field(True, description="Sigmoid scores (probability) or raw logits")
    use_fp16: bool = Field(False, description="Half precision (GPU)")
    max_length: int = Field(512, ge=16, le=8192)
    batch_size: int = Field(16, ge=1, le=1024)


class FlagRerank(_Reranker):
    type_id = "rerank.flag"
    key_params = ("top_n", "model")
    title = "FlagEmbedding reranker"
    description = ("Rescores candidates with FlagEmbedding's FlagReranker (optional 'flag' "
                   "extra); passes the input order through on failure.")
    Params = FlagParams

    def health(self, params: FlagParams) -> str | None:
        if importlib.util.find_spec("FlagEmbedding") is None:
            raise NodeConfigError(f"rerank.flag needs FlagEmbedding: {FLAG_INSTALL}")
        return f"FlagReranker {params.model} at {resolve_model(params.model)}"

    def scorer(self, ctx: NodeContext, params: FlagParams) -> tuple[Scorer, str]:
        model = load_flag_reranker(params.model, use_fp16=params.use_fp16,
                                   max_length=params.max_length, resources=ctx.resources)

        def batch(pairs: list[tuple[str, str]]) -> Any:
            return model.compute_score([list(p) for p in pairs], batch_size=len(pairs),
                                       max_length=params.max_length,
                                       normalize=params.normalize)

        kind = "probability" if params.normalize else "logit"
        return _batched(batch, ctx, params.batch_size), kind


class EmbeddingRerankParams(_RerankParams):
    pass


class EmbeddingRerank(_Reranker):
    type_id = "rerank.embedding"
    key_params = ("top_n",)
    title = "Embedding reranker"
    description = ("Rescores candidates by cosine similarity between query and chunk "
                   "embeddings (offline with the packaged embedder).")
    Params = EmbeddingRerankParams
    inputs = (*_Reranker.inputs,
              InputPort("embedder", EmbedderSpec, required=False,
                        description="Embedder to use (default: packaged all-MiniLM-L6-v2)"),
              InputPort("index", VectorIndex, required=False,
                        description="The vector store the candidates come from: when it "
                        "holds them embedded by the same model, their stored vectors are "
                        "used instead of embedding them again"))

    def run(self, ctx: NodeContext, params: EmbeddingRerankParams, query: Query,
            candidates: list[ScoredChunk], embedder: EmbedderSpec | None = None,
            index: VectorIndex | None = None) -> dict[str, Any]:
        self._local.embedder = embedder  # read by scorer() within this call (per thread)
        spec = embedder or EmbedderSpec()
        ctx.note(embedder=spec.model_id)
        if index is not None and candidates:
            ctx.note(stored_vectors=_read_stored(spec, index, list(candidates),
                                                 ctx.resources))
        return super().run(ctx, params, query, candidates)


    def scorer(self, ctx: NodeContext, params: EmbeddingRerankParams) -> tuple[Scorer, str]:
        spec = getattr(self._local, "embedder", None) or EmbedderSpec()
        return cosine_scorer(spec, ctx), "similarity"


def _read_stored(spec: EmbedderSpec, index: VectorIndex, candidates: list[ScoredChunk],
                 resources: Resources) -> int:
    """Put the candidates' stored vectors in the passage memo (so the scorer embeds none of
    them) when ``index`` was embedded by ``spec``'s model; how many were read."""
    if index.model_id != spec.model_id:
        return 0
    import numpy as np

    from modrag_nodes.vectorstore.handles import stored_vectors

    memo = passage_vectors(spec, resources)
    missing = [c for c in candidates if c.chunk.text not in memo]
    if not missing:
        return 0
    try:
        vectors = stored_vectors(index, [c.chunk.chunk_id for c in missing], resources)
    except Exception:  # a store that cannot be read: the scorer embeds them as before
        return 0
    if vectors is None:
        return 0
    memo.add([c.chunk.text for c in missing], np.asarray(vectors, dtype=np.float64))
    return len(missing)

PASSAGE_MEMO_SIZE = 50_000  # passage vectors one embedder's memo keeps (about 77 MB at 384-d)


class PassageVectors:
    """Passage vectors by text, for one embedder: a reranker scoring the same chunks for
    many queries (an evaluation, a tune) embeds each chunk once. Oldest out first."""

    def __init__(self, limit: int = PASSAGE_MEMO_SIZE) -> None:
        self.limit = limit
        self._vectors: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def __contains__(self, text: object) -> bool:
        return text in self._vectors

    def add(self, texts: list[str], vectors: Any) -> None:
        """Keep ``vectors`` (rows in the order of ``texts``) as these texts' vectors."""
        with self._lock:
            self._vectors.update(zip(texts, vectors, strict=True))
            while len(self._vectors) > self.limit:
                self._vectors.pop(next(iter(self._vectors)))

    def size_bytes(self) -> int:
        with self._lock:
            return sum(getattr(v, "nbytes", 0) for v in self._vectors.values())

    def embed(self, spec: EmbedderSpec, texts: list[str], ctx: NodeContext | None) -> Any:
        import numpy as np

        with self._lock:
            known = {t: self._vectors[t] for t in texts if t in self._vectors}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            fresh = np.asarray(embed_texts(spec, missing, role="passage", ctx=ctx),
                               dtype=np.float64)
            known.update(zip(missing, fresh, strict=True))
            self.add(missing, fresh)
        return np.stack([known[t] for t in texts])


def passage_vectors(spec: EmbedderSpec, resources: Resources | None = None) -> PassageVectors:
    """The memo of ``spec``'s passage vectors, held (and unloaded) with the models of
    ``resources`` (the run's; the process's when None)."""
    return given_or_process(resources).model(
        "passage-vectors", spec.model_id, PassageVectors,
        name=f"passage vectors of {spec.model_id}", size=lambda memo: memo.size_bytes() or 1)


def cosine_scorer(spec: EmbedderSpec, ctx: NodeContext | None = None) -> Scorer:
    """Cosine similarity between the query embedding and each text's embedding."""

    def score(query: str, texts: list[str]) -> list[float]:
        import numpy as np

        try:
            q = np.asarray(embed_texts(spec, [query], role="query", ctx=ctx), dtype=np.float64)
            held = ctx.resources if ctx is not None else None
            p = passage_vectors(spec, held).embed(spec, texts, ctx) if texts else \
                np.zeros((0, q.shape[1]))
        except ModuleNotFoundError as exc:
            raise RerankFailed(f"embedder {spec.model_id} is unavailable: {exc}") from exc
        q = q / max(np.linalg.norm(q), 1e-12)
        norms = np.linalg.norm(p, axis=1)
        return (p @ q[0] / np.where(norms == 0, 1.0, norms)).tolist()

    return score
