"""``modrag index``: run the ingest part of a graph (loader -> splitters -> store / BM25), in
this process or as a Ray Data pipeline (``--ray local|auto|HOST:PORT``).

``modrag new --from-folder DIR``: the graph to index a folder of one's own with, the
recommended pipeline. It is the main sample's design (``sample_graphs/basic_rag.json``)
without what is written for the demo corpus (its knowledge-graph dictionary and aliases):
hybrid retrieval (vectors and BM25, fused by reciprocal rank), evidence focus, the small-model
prompt with [n] citations, the grounding check and the refusal. What depends on the folder is
chosen from it: the collection is named after it, a folder with a file in Chinese gets the
multilingual e5 and BM25 on character bigrams, an English one all-MiniLM-L6-v2 on ONNX Runtime
(``composition.folder_embedder``), and the chunk size is the largest that keeps
every chunk inside the embedder's window, counted with the embedder's own tokenizer (and the
splitter is wired to the embedder, so a chunk of a file added later is cut to fit too). The
studio's File > New Graph from Folder… builds the same graph. The recipe, which names node
types, is the composition root's (``composition.folder_pipeline``); this module surveys the
folder for it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modrag_studio.commands.common import (
    add_trust_option,
    load_with_overrides,
    refused_untrusted,
    shell_inputs,
)
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED
from modrag_studio.commands.run_command import ProgressPrinter
from modrag_studio.engine.run.hooks import RunHook


def add_ray_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--ray [ADDRESS]``: 'local' when given alone."""
    parser.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                        help=f"{what} on Ray: 'local' (default when the value is left out) "
                        "starts Ray on this machine, 'auto' or HOST:PORT joins a running "
                        "cluster (needs the 'distributed' extra)")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    ix = subparsers.add_parser("index", help="index a corpus with a graph's ingest part "
                               "(locally or on Ray)")
    ix.add_argument("graph", help="graph JSON file")
    ix.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                    help="a graph input, e.g. corpus=PATH (repeatable)")
    ix.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE")
    add_ray_option(ix, "index")
    ix.add_argument("--embed-actors", type=int, default=1, metavar="N",
                    help="Ray actors holding an embedding model each (default 1)")
    ix.add_argument("--actor-cpus", type=float, default=1.0, metavar="C",
                    help="CPUs reserved per embedding actor (default 1)")
    ix.add_argument("--block-lines", type=int, default=500, metavar="N",
                    help="JSONL lines per Ray read block (default 500)")
    ix.add_argument("--progress-bars", action="store_true",
                    help="also show Ray Data's own per-operator progress bars")
    ix.add_argument("--cache-dir", help="node result cache folder (local indexing)")
    add_trust_option(ix)
    ix.add_argument("--allow-delete", action="store_true",
                    help="let the store synchronisation delete more than its set share "
                    "(param 'max_delete_share'), locally and on Ray")
    ix.add_argument("--json", action="store_true", help="print the summary as JSON")
    ix.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    ix.set_defaults(func=run_index)
    add_new_parser(subparsers)


def run_index(args: argparse.Namespace) -> int:
    from modrag_studio.distributed.job import (
        IndexRequest,
        run_index_job,
        summary_text,
    )
    from modrag_studio.distributed.plan import IngestGraphError, ingest_plan
    from modrag_studio.distributed.ray_index import RayIndexOptions
    from modrag_studio.engine.core.errors import ModragError, RunCancelled
    from modrag_studio.engine.trust.store_mode import allow_large_deletes

    doc = load_with_overrides(args.graph, args.set)
    if doc is None or refused_untrusted(args.graph, args.trust, doc):
        return EXIT_INVALID
    try:
        inputs = shell_inputs(doc, args.input)
        ingest_plan(doc)
    except (ValueError, IngestGraphError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    options = RayIndexOptions(embed_actors=args.embed_actors, actor_cpus=args.actor_cpus,
                              block_lines=args.block_lines, progress_bars=args.progress_bars)
    request = IndexRequest(doc, inputs, ray=args.ray, options=options,
                           cache_dir=Path(args.cache_dir) if args.cache_dir else None)
    progress = None if args.quiet else _StageLine()
    hooks = [] if args.quiet or args.ray else [NodeProgressLine(sys.stderr),
                                                ProgressPrinter(sys.stderr, len(doc.nodes))]
    try:
        try:
            with allow_large_deletes(args.allow_delete):
                summary = run_index_job(request, on_progress=progress if args.ray else None,
                                        on_status=None if args.quiet else progress.status,
                                        hooks=hooks)
        finally:
            if progress is not None:
                progress.end()
    except RunCancelled as exc:
        print(f"cancelled: {exc}; the store keeps what was written (a re-run completes it)",
              file=sys.stderr)
        return EXIT_RUN_FAILED
    except ModragError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID if isinstance(exc, IngestGraphError) else EXIT_RUN_FAILED
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(summary_text(summary))
    return EXIT_OK


class NodeProgressLine(RunHook):
    """A running node's own progress ("store: embedded 512/1,004 chunks (3.1/s, 2 min
    left)") on one rewritten stderr line, closed before the node's end line."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.open = False

    def on_node_progress(self, *, run_id: str, node_id: str, fraction: float | None,
                         message: str = "", **kwargs: Any) -> None:
        if message:
            self.stream.write(f"\r\033[K        {node_id}: {message}")
            self.stream.flush()
            self.open = True

    def on_node_end(self, **kwargs: Any) -> None:
        if self.open:
            self.stream.write("\n")
            self.open = False


class _StageLine:
    """The Ray job's progress on one rewritten stderr line; status lines on lines of their
    own."""

    def __init__(self) -> None:
        self.open = False

    def __call__(self, progress: Any) -> None:
        print(f"\r{progress.line()}", end="", file=sys.stderr, flush=True)
        self.open = True

    def status(self, text: str) -> None:
        self.end()
        print(text, file=sys.stderr, flush=True)

    def end(self) -> None:
        if self.open:
            print(file=sys.stderr, flush=True)
            self.open = False


# modrag new --from-folder -------------------------------------------------------------------
#: Chunk sizes tried, largest first (characters of the Markdown splitter).
CHUNK_SIZES = (800, 600, 450, 300, 200)
SAMPLE_CHARS = 20_000  # of each file, for its language


@dataclass(frozen=True)
class FolderSurvey:
    """What the folder holds, as far as the pipeline's settings depend on it."""

    folder: Path
    files: int
    languages: dict[str, int]  # language -> files
    chunk_size: int
    longest_chunk_tokens: int | None  # at that size (None: not counted)
    window: int | None

    def describe(self) -> str:
        langs = ", ".join(f"{n} {lang}" for lang, n in sorted(self.languages.items()))
        fit = (f"; longest chunk {self.longest_chunk_tokens} of the embedder's "
               f"{self.window} tokens" if self.longest_chunk_tokens is not None else "")
        return (f"{self.files} files ({langs or 'no text'}); chunk size {self.chunk_size} "
                f"characters{fit}")


def add_new_parser(subparsers: argparse._SubParsersAction) -> None:
    new = subparsers.add_parser(
        "new", help="write a new graph: the recommended pipeline on a folder of documents",
        description="Builds the main sample's pipeline (hybrid retrieval, evidence focus, "
        "small-model prompt, grounding check and refusal) on DIR: collection named after the "
        "folder, BM25 tokens for the languages found, chunks that fit the embedder's window.")
    new.add_argument("--from-folder", required=True, metavar="DIR", dest="folder",
                     help="folder of .md, .txt, .html, .pdf or BEIR .jsonl files")
    new.add_argument("--out", metavar="GRAPH.json",
                     help="where to write the graph (default: <folder name>_rag.json here)")
    new.add_argument("--force", action="store_true", help="replace an existing file")
    new.set_defaults(func=run_new)


def run_new(args: argparse.Namespace) -> int:
    from modrag_studio.engine.core.document import save
    from modrag_studio.engine.core.errors import ModragError
    from modrag_studio.engine.trust.reach import trust

    folder = Path(args.folder).expanduser()
    out = Path(args.out) if args.out else Path(f"{collection_name(folder.resolve())}_rag.json")
    if out.exists() and not args.force:
        print(f"error: {out} exists; give another --out or --force", file=sys.stderr)
        return EXIT_INVALID
    try:
        doc, survey = graph_from_folder(folder)
    except (ModragError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    save(doc, out)
    trust(out)  # made here: its runs do not ask about the folder it reads
    print(f"{folder}: {survey.describe()}", file=sys.stderr)
    print(f"wrote {out}: index it with `modrag index {out}`, ask with "
          f"`modrag run {out} --input question=\"...\"`", file=sys.stderr)
    return EXIT_OK


def graph_from_folder(folder: Path) -> tuple[Any, FolderSurvey]:
    """The recommended pipeline on ``folder`` (a ``GraphDocument`` never saved) and what was
    found there; a folder with no loadable file is refused, naming it."""
    from modrag_studio.engine.core.document import GraphDocument
    from modrag_studio.engine.core.errors import NodeConfigError

    folder = folder.expanduser().resolve()
    if not folder.is_dir():
        raise NodeConfigError(f"--from-folder: '{folder}' is not a folder")
    survey = survey_folder(folder)
    if not survey.files:
        raise NodeConfigError(f"--from-folder: no .md, .txt, .html, .pdf or .jsonl file in "
                              f"'{folder}'")
    doc = GraphDocument.model_validate(pipeline(folder, survey))
    return laid_out(doc), survey


def laid_out(doc: Any) -> Any:
    """``doc`` with the canvas positions of the studio's auto layout."""
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.core.document import Layout, NodeLayout
    from modrag_studio.engine.layout.auto_layout import auto_layout

    positions = auto_layout(doc, default_registry())
    nodes = {node_id: NodeLayout(x=float(x), y=float(y)) for node_id, (x, y) in positions.items()}
    return doc.model_copy(update={"layout": Layout(nodes=nodes)})


def survey_folder(folder: Path) -> FolderSurvey:
    """Languages of the folder's files and the largest chunk size that fits the embedder."""
    from modrag_nodes.ingest.api import LoadParams, load_documents
    from modrag_nodes.text.scripts import language_of

    documents, report = load_documents(folder, LoadParams())
    by_file: dict[str, str] = {}
    for doc in documents:
        key = str(doc.metadata.get("path", doc.doc_id))
        by_file.setdefault(key, "")
        if len(by_file[key]) < SAMPLE_CHARS:
            by_file[key] += doc.text[:SAMPLE_CHARS]
    languages = Counter(language_of(text) for text in by_file.values())
    size, longest, window = fitting_chunk_size(documents, folder_spec("zh" in languages))
    return FolderSurvey(folder, report.files_loaded, dict(languages), size, longest, window)


def fitting_chunk_size(documents: list[Any], spec: Any
                       ) -> tuple[int, int | None, int | None]:
    """(chunk size, longest chunk in tokens, window): the largest of ``CHUNK_SIZES`` whose
    Markdown chunks all fit the window of the embedder ``spec`` (an ``EmbedderSpec``),
    counted with its tokenizer; the smallest size, uncounted, when the embedder is not at
    hand."""
    from modrag_nodes.embedding.api import spec_token_counts
    from modrag_nodes.ingest.api import split_markdown

    longest, window = None, None
    for size in CHUNK_SIZES:
        texts = [c.text for doc in documents for c in split_markdown(doc, size, 0, 50)]
        counted = spec_token_counts(spec, texts)
        if counted is None:
            return CHUNK_SIZES[-1], None, None
        counts, window = counted
        longest = max(counts, default=0)
        if longest <= window:
            return size, longest, window
    return CHUNK_SIZES[-1], longest, window


def folder_spec(chinese: bool) -> Any:
    """The ``EmbedderSpec`` of the embedder the folder's pipeline gets (``composition.
    folder_embedder``), to count its chunks' tokens with."""
    from modrag_nodes.embedding.api import EmbedderSpec
    from modrag_studio.composition import folder_embedder

    params = folder_embedder(chinese)
    extra = {"runtime": params["runtime"]} if "runtime" in params else {}
    return EmbedderSpec(kind=params["kind"], **({"model": params["model"]}
                                               if "model" in params else {}), extra=extra)


#: Folder names that say nothing of what is in them: the parent's name goes first.
GENERIC_FOLDER_NAMES = frozenset({"content", "corpus", "data", "doc", "docs", "documents",
                                  "files", "input", "markdown", "md", "pages", "source", "src",
                                  "text", "texts"})


def collection_name(folder: Path) -> str:
    """A Chroma collection name from the folder's name, its parent's first when the name is
    generic (``pkgdocs-dev/docs`` -> ``pkgdocs-dev_docs``): 3-63 of A-Z a-z 0-9 . _ -,
    starting and ending with a letter or digit."""
    base = folder.name
    if base.lower() in GENERIC_FOLDER_NAMES and folder.parent.name:
        base = f"{folder.parent.name}_{base}"
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._-")[:63].strip("._-")
    return name if len(name) >= 3 else f"{name or 'corpus'}_docs"


def pipeline(folder: Path, survey: FolderSurvey) -> dict[str, Any]:
    """The graph as a plain dict (the file format): the composition's folder recipe with what
    the survey found."""
    from modrag_studio.composition import folder_pipeline

    langs = ", ".join(sorted(survey.languages)) or "unknown"
    return folder_pipeline(folder, collection=collection_name(folder),
                           chunk_size=survey.chunk_size, chinese="zh" in survey.languages,
                           found=f"{survey.describe()}; languages: {langs}")
