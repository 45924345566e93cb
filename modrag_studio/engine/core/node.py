"""The node-author API: what a node type needs, in one module.

``NodeType`` (the declaration every node derives from) and ``NodeContext`` (what a visit may
use: the run's ``resources``, ``cancel``, ``work_dir``, progress, streaming, trace notes) are
defined here; the ports, data contracts, errors, path params and the resource service a node
uses are re-exported, so a node module imports the engine from here alone (the evidence
roles, ``engine.evidence.lineage``, and the store write modes, ``engine.trust.store_mode``,
live in the layers that read them).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from modrag_studio.engine.core.datatypes import (
    Answer,
    ChatMessage,
    Chunk,
    Citation,
    Claim,
    Contract,
    Document,
    Prompt,
    Query,
    ScoredChunk,
    ScoreKind,
    SourceRank,
)
from modrag_studio.engine.core.errors import (
    MissingRunInput,
    ModragError,
    NodeConfigError,
    RunCancelled,
)
from modrag_studio.engine.core.paths import (
    AnyPath,
    FilePath,
    FolderPath,
    OptionalFilePath,
    env_limit,
    model_dir,
    open_regular,
    resolve_path,
    work_home,
)
from modrag_studio.engine.core.ports import InputPort, OutputPort
from modrag_studio.engine.core.resources import (
    MemoStack,
    Resources,
    given_or_process,
    parameter_bytes,
)

__all__ = [
    "Answer", "AnyPath", "CancelToken", "ChatMessage", "Chunk", "Citation", "Claim",
    "Contract", "Document", "env_limit", "FilePath", "FolderPath", "given_or_process",
    "InputPort", "MemoStack", "MissingRunInput", "model_dir", "ModragError", "node_context",
    "NodeConfigError", "NodeContext", "NodeType", "NoParams", "open_regular",
    "OptionalFilePath", "OutputPort", "parameter_bytes", "Prompt", "Query", "resolve_path",
    "Resources", "RunCancelled", "ScoredChunk", "ScoreKind", "SourceRank", "work_home",
]


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CancelToken:
    """Thread-safe cancel flag checked between nodes and inside long node loops."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise RunCancelled("run cancelled")

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return True (early) when cancelled."""
        return self._event.wait(seconds)


class NodeContext:
    """What a node may use while it runs: the run's resources (models, memos, open stores),
    cancel, its work folder, progress, streaming and notes for the trace.

    Made by :func:`node_context` (the executor's visits, and work that runs one node's code
    outside a graph run: an evaluation set's generator, a Ray worker); nodes reach every run
    service through it, never through globals.
    """

    def __init__(
        self,
        *,
        node_id: str,
        type_id: str,
        iteration: int,
        cancel: CancelToken,
        on_progress: Callable[[float | None, str], None],
        on_stream: Callable[[str], None],
        logger: logging.Logger,
        work_dir: Path,
        run_inputs: Mapping[str, Any],
        resources: Resources | None = None,
    ) -> None:
        self.node_id = node_id
        self.type_id = type_id
        self.iteration = iteration
        self.cancel = cancel
        self.log = logger
        self.work_dir = work_dir
        self.run_inputs = run_inputs
        self.resources = given_or_process(resources)  # models, memos and stores to reuse
        self.details: dict[str, Any] = {}
        self.warnings: list[str] = []
        self._on_progress = on_progress
        self._on_stream = on_stream

    def progress(self, done: float, total: float | None = None, message: str = "") -> None:
        """Report progress (``done`` of ``total``, or a fraction when ``total`` is None)."""
        fraction = done / total if total else done
        self._on_progress(max(0.0, min(1.0, fraction)), message)

    def stream(self, text: str) -> None:
        """Emit a piece of streamed output (LLM tokens)."""
        self._on_stream(text)

    def note(self, **details: Any) -> None:
        """Record facts about this visit (route taken, strategy chosen) in the trace."""
        self.details.update(details)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        self.log.warning("%s: %s", self.node_id, message)

    def check_cancelled(self) -> None:
        self.cancel.raise_if_cancelled()


def node_context(node_id: str, type_id: str, *, resources: Resources,
                 cancel: CancelToken | None = None, work_dir: Path | None = None,
                 run_inputs: Mapping[str, Any] | None = None, iteration: int = 0,
                 on_progress: Callable[[float | None, str], None] | None = None,
                 on_stream: Callable[[str], None] | None = None) -> NodeContext:
    """The context of one visit of a node: the executor's, and the one to give a node's
    code run outside a graph run (progress and streamed text go nowhere unless asked)."""
    return NodeContext(
        node_id=node_id, type_id=type_id, iteration=iteration, cancel=cancel or CancelToken(),
        on_progress=on_progress or _ignore_progress, on_stream=on_stream or _ignore_stream,
        logger=logging.getLogger(f"modrag.node.{node_id}"), work_dir=work_dir or work_home(),
        run_inputs=run_inputs if run_inputs is not None else {}, resources=resources)


def _ignore_progress(fraction: float | None, message: str) -> None:
    return None


def _ignore_stream(text: str) -> None:
    return None


class NodeType:
    """Base class of node types. Subclasses declare ports, params and implement ``run``.

    ``run`` receives the validated params and one keyword argument per connected input port
    (absent optional inputs are passed as ``None``; ``multiple`` ports get a list), and returns
    a dict of output values by port name. An output port missing from the dict is inactive:
    nodes that read only from it are skipped, which is how routers select branches.
    """

    type_id: ClassVar[str]
    version: ClassVar[int] = 1
    category: ClassVar[str] = "General"
    title: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Params: ClassVar[type[BaseModel]] = NoParams
    inputs: ClassVar[tuple[InputPort, ...]] = ()
    outputs: ClassVar[tuple[OutputPort, ...]] = ()
    aliases: ClassVar[tuple[str, ...]] = ()
    cacheable: ClassVar[bool] = True
    disk_cache: ClassVar[bool] = True
    #: False for nodes that never change their inputs (e.g. pass-throughs): they get the
    #: upstream values themselves instead of private copies.
    isolate_inputs: ClassVar[bool] = True
    routes: ClassVar[bool] = False
    #: True for a pass-through whose one output carries its one input's value and type
    #: (a reroute point): validation and edge coercions use the type wired into it.
    passes_through: ClassVar[bool] = False
    #: "input" / "output" for the nodes that declare a graph's named inputs and outputs
    #: (read through ``engine.graph_io``, never by type id).
    graph_role: ClassVar[Literal["input", "output"] | None] = None
    #: How output chunks relate to input chunks (an ``engine.lineage.EvidenceRole``).
    evidence_role: ClassVar[Any] = None
    #: The one to three params the canvas shows on the node and edits in place.
    key_params: ClassVar[tuple[str, ...]] = ()
    #: Params written for one corpus (a loader's glob, a dictionary, a collection name): a
    #: run whose corpus input differs from the graph's default is warned about each one set.
    corpus_params: ClassVar[tuple[str, ...]] = ()
    #: What the node keeps between runs for later searches: "vector" (a vector store's
    #: collection, whose ``index`` output is a ``VectorIndex``) or "graph" (a knowledge graph
    #: file). Read through ``registry.type_ids(where=...)``, never by type id.
    store_role: ClassVar[Literal["vector", "graph"] | None] = None
    #: The kind of trace span a visit makes (None: a plain step of the chain); "evaluator"
    #: for a node that judges an answer (an evaluation reads its judgement).
    span_kind: ClassVar[Literal["retriever", "reranker", "embedding", "llm", "evaluator"]
                        | None] = None
    #: The param whose value is the node's role and titles it ("Rewrite", "HyDE") when the
    #: user gave no title.
    title_param: ClassVar[str | None] = None
    #: Params whose choices the studio lists (``param_listing``): param -> the params its
    #: list depends on (asked again when one of them changes).
    choice_sources: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    def run(self, ctx: NodeContext, params: Any, **inputs: Any) -> dict[str, Any]:
        raise NotImplementedError

    def fingerprint(
        self, params: Any, inputs: Mapping[str, Any], run_inputs: Mapping[str, Any]
    ) -> str | None:
        """Extra cache-key material, e.g. the content hash of files the node reads."""
        return None

    def health(self, params: Any) -> str | None:
        """Check that what the node depends on answers (a model, a server, a folder).

        Return a short description when healthy, raise with a clear message when not, or
        return None when the node has nothing to check. Used by ``GET /health``.
        """
        return None

    @classmethod
    def new_node_params(cls) -> dict[str, Any]:
        """Params a node of this type starts with when a user adds it in the studio.

        The choice may depend on this machine (e.g. the best installed model); it is written
        into the node explicitly, so a saved graph never depends on where it is opened.
        """
        return {}

    def env_reads(self, params: Any) -> list[tuple[str, ...]] | None:
        """(param, environment variable[, host it is sent to]) for each variable the node
        reads, for the trust list; None (the default) when the type does not say, and the
        list names every param like ``api_key_env`` instead."""
        return None

    def store_writes(self, params: Any, outside: Callable[[str], bool]
                     ) -> list[tuple[str, str]]:
        """(param, text) of what the node changes outside its graph's folder (a store's
        collection), for the trust list; ``outside(path)`` says whether a path is outside."""
        return []

    def search_ahead(self, params: Any, inputs: dict[str, Any], texts: list[str],
                     resources: Resources | None = None) -> int:
        """An evaluation's hook: search all ``texts`` at once from this visit's ``inputs``
        into the memo open in ``resources`` (the runs'), so each question's run finds its
        results memoised; returns how many were searched (0: the node does not search
        ahead)."""
        return 0

    def param_listing(self, params: Any, name: str) -> Any | None:
        """The choices of param ``name`` (one of ``choice_sources``) as a listing with
        ``models``, ``summary()`` and ``error``; None: the param is free text."""
        return None

    def is_cacheable(self, params: Any) -> bool:
        """Whether this visit may be served from cache (override for e.g. sampled LLM calls)."""
        return self.cacheable

    @classmethod
    def input_port(cls, name: str) -> InputPort | None:
        return next((p for p in cls.inputs if p.name == name), None)

    @classmethod
    def output_port(cls, name: str) -> OutputPort | None:
        return next((p for p in cls.outputs if p.name == name), None)

    @classmethod
    def display_title(cls) -> str:
        return cls.title or cls.type_id

    @classmethod
    def describe(cls) -> dict[str, Any]:
        """A JSON-able description of the type (for ``modrag nodes`` and the palette)."""
        from modrag_studio.engine.core.ports import type_name

        return {
            "type": cls.type_id,
            "version": cls.version,
            "title": cls.display_title(),
            "category": cls.category,
            "description": cls.description,
            "inputs": [
                {
                    "name": p.name,
                    "type": type_name(p.type),
                    "required": p.required,
                    "multiple": p.multiple,
                    "description": p.description,
                }
                for p in cls.inputs
            ],
            "outputs": [
                {"name": p.name, "type": type_name(p.type), "description": p.description}
                for p in cls.outputs
            ],
            "params": cls.Params.model_json_schema(),
            "aliases": list(cls.aliases),
        }
