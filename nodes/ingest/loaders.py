"""``load.files``: documents from a file or a folder of .txt, .md, .html, .pdf and BEIR .jsonl.

Doc ids are stable: the path relative to the folder given (the file name for a single file),
``path#page=N`` for PDF pages (one document per page by default), the ``_id`` for BEIR
corpus lines. In ``pdf_mode="file"`` a PDF is one document whose metadata carries
``page_offsets`` (``[[start_char, page], ...]``); splitters turn that into each chunk's page.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.ingest.contracts import FileProblem, LoadReport
from modrag_nodes.ingest.html_text import html_to_text
from modrag_studio.engine.cache.node_cache import stable_hash
from modrag_studio.engine.core.node import (
    AnyPath,
    Document,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
    RunCancelled,
    open_regular,
)
from modrag_studio.engine.core.node import resolve_path as graph_path
from modrag_studio.engine.evidence.lineage import EvidenceRole
from modrag_studio.engine.run.cancel_scope import check_cancelled, is_cancelled

SUPPORTED = (".txt", ".md", ".markdown", ".html", ".htm", ".pdf", ".jsonl")
HASH_LIMIT = 1 << 20  # files up to 1 MiB are fingerprinted by content, larger by size + mtime


class UnreadableFile(Exception):
    """A file could not be turned into documents; the message is the reason."""


class NotADocument(UnreadableFile):
    """A file that holds no documents by nature (binary bytes, JSON data that is not a BEIR
    corpus): skipped and counted, not reported as a failure."""


class LoadParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: AnyPath = Field("", description="A file or a folder (the 'path' input overrides it)")
    glob: str = Field("*", description="Filter on file names, or on relative paths when it "
                                       "contains '/' (e.g. '*.html', 'docs/**/*.md')")
    exclude: list[str] = Field(
        default_factory=list, description="Names (or relative paths with '/') left out even "
                                          "when the glob matches them, e.g. 'README.md'")
    recursive: bool = Field(True, description="Descend into sub-folders")
    extensions: list[str] = Field(default_factory=lambda: list(SUPPORTED),
                                  description="File types to load")
    pdf_mode: Literal["page", "file"] = Field(
        "page", description="One document per PDF page, or per file with page offsets")
    encoding: str = Field("utf-8", description="Encoding of .txt/.md/.jsonl files")
    beir_title_in_text: bool = Field(
        True, description="Put a BEIR record's title before its text (blank line between)")
    skip_hidden: bool = Field(True, description="Ignore files and folders starting with '.'")
    follow_external_links: bool = Field(
        False, description="Load files that symlinks point to outside the folder")
    max_file_mb: float = Field(
        64.0, ge=0, description="Text, Markdown and HTML files larger than this are not read "
                                "(reported as unreadable); 0: no limit. BEIR .jsonl corpora "
                                "and PDFs are not limited")
    max_total_mb: float = Field(
        128.0, ge=0, description="Refuse a corpus whose text, Markdown and HTML files take "
                                 "more than this together: a run holds them in memory with "
                                 "their chunks and index (about 20 times their size); 0: no "
                                 "limit")


def resolve_path(params: LoadParams, path_input: str | None) -> Path:
    raw = path_input if path_input not in (None, "") else params.path
    if not raw:
        raise NodeConfigError("load.files: param 'path' is empty and the 'path' input gave "
                              "nothing; set a file or folder")
    path = graph_path(str(raw))
    if not path.exists():
        raise NodeConfigError(f"load.files: path '{raw}' does not exist")
    return path


def match_files(root: Path, params: LoadParams, should_stop: Callable[[], bool] | None = None,
                counts: dict[str, int] | None = None) -> tuple[list[Path], list[FileProblem]]:
    """Files under ``root`` that pass the glob, exclude and extension filters (sorted), and the
    files skipped: type not loaded, a name that is not UTF-8, a symlink leaving the folder.
    ``should_stop`` is asked while walking (a huge tree stops when the run is cancelled).
    ``counts`` (when given) receives ``files_in_folder``, ``not_matched`` (files of a loaded
    type the glob left out) and ``excluded``."""
    tally = counts if counts is not None else {}
    tally.update(files_in_folder=0, not_matched=0, excluded=0)
    if root.is_file():
        tally["files_in_folder"] = 1
        return [root], []
    if root.exists() and not root.is_dir():
        raise NodeConfigError(f"load.files: path '{root}' is {_kind(root)}, not a file or a "
                              "folder of files")
    stop = should_stop or is_cancelled
    exts = {e.lower() if e.startswith(".") else f".{e.lower()}" for e in params.extensions}
    real_root = root.resolve()
    files: list[Path] = []
    skipped: list[FileProblem] = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        if stop():
            raise RunCancelled("run cancelled while listing files")
        here = Path(folder)
        if not params.recursive:
            dirs.clear()
        for name in list(dirs):
            link = here / name
            if params.skip_hidden and name.startswith("."):
                dirs.remove(name)
            elif link.is_symlink():
                dirs.remove(name)  # never descended: inside it is already walked, else outside
                if not _inside(link, real_root) and not params.follow_external_links:
                    skipped.append(FileProblem(file=_shown(root, link), reason="symlink to a "
                                               "folder outside the corpus folder (not followed)"))
        for name in names:
            path = here / name
            rel = _shown(root, path)
            if params.skip_hidden and any(p.startswith(".") for p in rel.split("/")):
                continue
            tally["files_in_folder"] += 1
            if any(_glob_ok(rel, pattern) for pattern in params.exclude if pattern):
                tally["excluded"] += 1
                continue
            if not _glob_ok(rel, params.glob) and path.suffix.lower() in exts:
                tally["not_matched"] += 1
            if not _utf8(name):
                skipped.append(FileProblem(file=rel, reason="file name is not valid UTF-8 "
                                                            "(rename the file)"))
                continue
            if path.is_symlink() and not params.follow_external_links \
                    and not _inside(path, real_root):
                skipped.append(FileProblem(file=rel, reason="symlink to a file outside the "
                                                            "corpus folder (not followed)"))
                continue
            if not path.is_file() or not _glob_ok(rel, params.glob):
                if path.exists() and not path.is_dir() and _glob_ok(rel, params.glob):
                    skipped.append(FileProblem(file=rel, reason=f"{_kind(path)}, not a "
                                               "regular file (never opened)"))
                continue
            if path.suffix.lower() not in exts:
                skipped.append(FileProblem(file=rel, reason=f"file type "
                                           f"'{path.suffix or '(none)'}' is not loaded"))
            elif _is_beir_aux(rel):
                skipped.append(FileProblem(file=rel, reason="BEIR queries file, not a corpus"))
            else:
                files.append(path)
    return sorted(files), sorted(skipped, key=lambda p: p.file)


def _kind(path: Path) -> str:
    """What a path that is neither a regular file nor a folder is."""
    import stat

    mode = path.stat().st_mode
    return "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) \
        else "a device"


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes arrive as lone surrogates
        return False
    return True


def _shown(root: Path, path: Path) -> str:
    """The relative path, with bytes that are not UTF-8 shown as ``\\xNN``."""
    rel = path.relative_to(root).as_posix()
    return rel if _utf8(rel) else os.fsencode(rel).decode("utf-8", "backslashreplace")


def _inside(path: Path, real_root: Path) -> bool:
    target = Path(os.path.realpath(path))
    return target == real_root or real_root in target.parents


def _glob_ok(rel: str, pattern: str) -> bool:
    if pattern in ("", "*", "**", "**/*"):
        return True
    if "/" in pattern:
        return fnmatch.fnmatch(rel, pattern) or (
            pattern.startswith("**/") and fnmatch.fnmatch(rel, pattern[3:]))
    return fnmatch.fnmatch(rel.rsplit("/", 1)[-1], pattern)


def _is_beir_aux(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1].lower()
    return name.endswith(".jsonl") and name.startswith("queries")


def files_fingerprint(root: Path, files: list[Path]) -> str:
    """Content fingerprint: relative path, size, mtime_ns, and a hash for small files."""
    rows = []
    for path in files:
        check_cancelled()
        stat = path.stat()
        row: list[Any] = [_rel(root, path), stat.st_size, stat.st_mtime_ns]
        if stat.st_size <= HASH_LIMIT:
            row.append(hashlib.blake2b(read_bytes(path), digest_size=16).hexdigest())
        rows.append(row)
    return stable_hash([str(root.resolve()), rows])


def _rel(root: Path, path: Path) -> str:
    return path.name if root.is_file() else path.relative_to(root).as_posix()


# readers ---------------------------------------------------------------------
def read_bytes(path: Path, block: int = 1 << 20) -> bytes:
    """The file's bytes, read in blocks; stops when the run in this context is cancelled."""
    parts: list[bytes] = []
    with open_regular(path) as fh:  # a FIFO or a device is refused, never waited on
        while chunk := fh.read(block):
            parts.append(chunk)
            check_cancelled()
    return b"".join(parts)


def read_text(path: Path, encoding: str) -> str:
    raw = read_bytes(path)
    if b"\x00" in raw[:8192]:
        raise NotADocument("binary content (NUL bytes), not a text document")
    try:
        text = raw.decode("utf-8-sig" if encoding.lower() in ("utf-8", "utf8") else encoding)
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"not valid {encoding} text (byte {exc.start}); set the "
                             "'encoding' param") from None
    except LookupError:
        raise NodeConfigError(f"load.files: unknown encoding '{encoding}' (param 'encoding')")\
            from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


LARGE_FILE_BYTES = 8 << 20  # a text file this large is read with a warning (slow to split)
_SIZE_CAPPED = (".txt", ".md", ".markdown", ".html", ".htm")


def check_size(path: Path, params: LoadParams, warn: Callable[[str], None] | None,
               rel: str) -> None:
    """Refuse a text file over ``max_file_mb``; warn about one over ``LARGE_FILE_BYTES``."""
    if path.suffix.lower() not in _SIZE_CAPPED:
        return
    size = path.stat().st_size
    megabytes = size / (1 << 20)
    if params.max_file_mb and megabytes > params.max_file_mb:
        raise UnreadableFile(f"{megabytes:.1f} MB, larger than max_file_mb "
                             f"({params.max_file_mb:g} MB); raise the param to load it")
    if size > LARGE_FILE_BYTES and warn is not None:
        warn(f"large file {rel} ({megabytes:.1f} MB): reading and splitting it takes a while")


def check_total(files: list[Path], params: LoadParams) -> None:
    """Refuse, before reading any, files whose text (the types ``max_file_mb`` caps, those it
    lets through) takes more than ``max_total_mb`` together: the cap per file let three
    59 MB files take 3.7 GB."""
    if not params.max_total_mb:
        return
    cap = params.max_file_mb * (1 << 20) if params.max_file_mb else math.inf
    total = 0
    for path in files:
        if path.suffix.lower() in _SIZE_CAPPED:
            with contextlib.suppress(OSError):
                if (size := path.stat().st_size) <= cap:
                    total += size
    if total > params.max_total_mb * (1 << 20):
        raise NodeConfigError(
            f"load.files: the text files to load take {total / (1 << 20):.1f} MB together, "
            f"more than max_total_mb ({params.max_total_mb:g} MB): a run holds them in "
            "memory with their chunks and index (about 20 times their size); raise the "
            "param (0: no limit) or load fewer files (glob, exclude)")


def load_file(root: Path, path: Path, params: LoadParams) -> list[Document]:
    """The documents of one file; raises UnreadableFile with the reason."""
    rel = _rel(root, path)
    suffix = path.suffix.lower()
    base = {"path": rel, "file_type": suffix.lstrip(".")}
    source = str(path)
    if suffix in (".txt", ".md", ".markdown"):
        text = read_text(path, params.encoding)
        title = _md_title(text) if suffix != ".txt" else ""
        docs = [Document(doc_id=rel, text=text, source=source, title=title or path.stem,
                         metadata=base)]
    elif suffix in (".html", ".htm"):
        try:
            title, text = html_to_text(read_bytes(path))
        except Exception as exc:
            raise UnreadableFile(f"HTML parse error: {exc}") from None
        docs = [Document(doc_id=rel, text=text, source=source, title=title or path.stem,
                         metadata=base)]
    elif suffix == ".pdf":
        docs = _load_pdf(path, rel, source, base, params.pdf_mode)
    elif suffix == ".jsonl":
        docs = list(_load_beir(path, rel, source, params))
    else:
        raise UnreadableFile(f"unsupported file type '{suffix}'")
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise UnreadableFile("no text could be extracted")
    return docs


def _md_title(text: str) -> str:
    for line in text.splitlines()[:50]:
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def _load_pdf(path: Path, rel: str, source: str, base: dict[str, Any],
              mode: str) -> list[Document]:
    import pypdf

    pypdf_log = logging.getLogger("pypdf")
    level = pypdf_log.level
    pypdf_log.setLevel(logging.ERROR)  # font-encoding chatter on every page
    try:
        try:
            reader = pypdf.PdfReader(str(path))
            if reader.is_encrypted and not reader.decrypt(""):
                raise UnreadableFile("encrypted PDF (needs a password)")
            pages = [(page.extract_text() or "") for page in reader.pages]
            info_title = (reader.metadata.title if reader.metadata else None) or ""
        except UnreadableFile:
            raise
        except Exception as exc:
            raise UnreadableFile(f"PDF read error: {type(exc).__name__}: {exc}") from None
    finally:
        pypdf_log.setLevel(level)
    pages = [p.replace("\r\n", "\n").replace("\r", "\n") for p in pages]
    title = str(info_title).strip() or path.stem
    meta = {**base, "n_pages": len(pages)}
    if mode == "page":
        return [Document(doc_id=f"{rel}#page={n}", text=text, source=source, title=title,
                         metadata={**meta, "page": n})
                for n, text in enumerate(pages, start=1) if text.strip()]
    offsets: list[list[int]] = []
    parts: list[str] = []
    position = 0
    for n, text in enumerate(pages, start=1):
        if not text.strip():
            continue
        if parts:
            parts.append("\n\n")
            position += 2
        offsets.append([position, n])
        parts.append(text)
        position += len(text)
    return [Document(doc_id=rel, text="".join(parts), source=source, title=title,
                     metadata={**meta, "page_offsets": offsets})]


def _load_beir(path: Path, rel: str, source: str, params: LoadParams) -> Iterator[Document]:
    text = read_text(path, params.encoding)
    return beir_documents(enumerate(text.split("\n"), start=1), rel, source, params)


def beir_documents(lines: Iterable[tuple[int, str]], rel: str, source: str,
                   params: LoadParams) -> Iterator[Document]:
    """Documents of numbered BEIR corpus lines (all of a file, or a block of it)."""
    seen: set[str] = set()
    for number, line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UnreadableFile(f"line {number}: invalid JSON ({exc.msg})") from None
        if not isinstance(record, dict) or "_id" not in record or "text" not in record:
            if not seen:  # the first record already: the file is some other JSON data
                raise NotADocument("JSON lines data, not a BEIR corpus (its first record "
                                   "has no '_id' and 'text')")
            raise UnreadableFile(f"line {number}: not a BEIR corpus record "
                                 "(needs '_id' and 'text')")
        doc_id = str(record["_id"])
        if doc_id in seen:
            raise UnreadableFile(f"line {number}: duplicate _id '{doc_id}'")
        seen.add(doc_id)
        title = str(record.get("title") or "")
        body = str(record.get("text") or "")
        full = f"{title}\n\n{body}" if params.beir_title_in_text and title else body
        extra = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        yield Document(doc_id=doc_id, text=full, source=source, title=title,
                       metadata={**extra, "path": rel, "file_type": "jsonl", "line": number})


def load_documents(root: Path, params: LoadParams, ctx: NodeContext | None = None
                   ) -> tuple[list[Document], LoadReport]:
    """Load every matched file; unreadable files go to the report and the rest continue."""
    counts: dict[str, int] = {}
    files, skipped = match_files(root, params, _stopper(ctx), counts)
    check_total(files, params)
    report = LoadReport(path=str(root), glob=params.glob, files_matched=len(files),
                        skipped=skipped, **counts)
    documents: list[Document] = []
    seen: set[str] = set()
    for number, path in enumerate(files):
        if ctx is not None:
            ctx.check_cancelled()
            ctx.progress(number, len(files), f"reading {_rel(root, path)}")
        try:
            check_size(path, params, ctx.warn if ctx is not None else None, _rel(root, path))
            docs = load_file(root, path, params)
        except NotADocument as exc:
            report.skipped.append(FileProblem(file=_rel(root, path), reason=str(exc)))
            continue
        except (UnreadableFile, OSError) as exc:
            reason = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
            problem = FileProblem(file=_rel(root, path), reason=reason)
            report.unreadable.append(problem)
            _remember_unreadable(str(path), failed=True)
            if ctx is not None:
                ctx.warn(f"unreadable file {problem.file}: {problem.reason}")
            continue
        _remember_unreadable(str(path), failed=False)
        report.files_loaded += 1
        documents.extend(_unique_ids(docs, seen, _rel(root, path), ctx))
    report.documents = len(documents)
    report.skipped.sort(key=lambda p: p.file)
    return documents, report


def skipped_summary(skipped: list[FileProblem], shown: int = 5) -> str:
    """``a.json (file type '.json' is not loaded), ...`` for the first ``shown`` files."""
    text = ", ".join(f"{p.file} ({p.reason})" for p in skipped[:shown])
    return text + (f" and {len(skipped) - shown} more" if len(skipped) > shown else "")


def _stopper(ctx: NodeContext | None) -> Callable[[], bool] | None:
    """A ``should_stop`` that raises RunCancelled through the node's context."""
    if ctx is None:
        return None

    def stop() -> bool:
        ctx.check_cancelled()
        return False

    return stop


_unreadable: dict[str, float] = {}
_unreadable_lock = threading.Lock()


def _remember_unreadable(source: str, *, failed: bool) -> None:
    with _unreadable_lock:
        if failed:
            _unreadable[source] = time.time()
            while len(_unreadable) > 10_000:
                _unreadable.pop(next(iter(_unreadable)))
        else:
            _unreadable.pop(source, None)


def recently_unreadable() -> set[str]:
    """Sources (file paths as documents carry them) whose last load in this process failed:
    a store keeps their chunks rather than deleting them."""
    with _unreadable_lock:
        return set(_unreadable)


def _unique_ids(docs: list[Document], seen: set[str], rel: str,
                ctx: NodeContext | None) -> list[Document]:
    """Documents whose id another file already used get ``{file}:{id}`` (with a warning)."""
    renamed = 0
    for index, doc in enumerate(docs):
        if doc.doc_id in seen:
            docs[index] = doc.model_copy(update={"doc_id": f"{rel}:{doc.doc_id}"})
            renamed += 1
        seen.add(docs[index].doc_id)
    if renamed and ctx is not None:
        ctx.warn(f"{rel}: {renamed} document id(s) already used by an earlier file; "
                 f"renamed to '{rel}:<id>'")
    return docs


class LoadFiles(NodeType):
    type_id = "load.files"
    key_params = ("glob",)
    corpus_params = ("glob", "exclude")
    evidence_role = EvidenceRole("source")
    version = 1
    category = "Loading"
    title = "Load files"
    description = ("Loads .txt, .md, .html, .pdf and BEIR .jsonl files from a file or folder "
                   "into documents; files that hold no documents (other types, binary files, "
                   "JSON data) are skipped and counted, unreadable ones reported.")
    Params = LoadParams
    inputs = (InputPort("path", str, required=False,
                        description="File or folder; overrides the 'path' param"),)
    outputs = (OutputPort("documents", list[Document], "One document per file, PDF page or "
                                                      "BEIR record"),
               OutputPort("report", LoadReport, "Matched, loaded, skipped and unreadable files"))

    def fingerprint(self, params: LoadParams, inputs: Mapping[str, Any],
                    run_inputs: Mapping[str, Any]) -> str:
        root = resolve_path(params, inputs.get("path"))
        files, _ = match_files(root, params)
        return files_fingerprint(root, files)

    def run(self, ctx: NodeContext, params: LoadParams, path: str | None = None
            ) -> dict[str, Any]:
        root = resolve_path(params, path)
        documents, report = load_documents(root, params, ctx)
        ctx.progress(1.0, None, f"{len(documents)} documents")
        ctx.note(files_matched=report.files_matched, files_loaded=report.files_loaded,
                 documents=report.documents, unreadable=len(report.unreadable),
                 skipped=len(report.skipped))
        if report.excluded:
            ctx.note(excluded=report.excluded)
        if report.skipped:
            ctx.note(skipped_files=skipped_summary(report.skipped))
        if left_out := report.left_out():
            ctx.warn(f"{left_out} ({report.not_matched} of a loaded type do not match the "
                     "glob; set param 'glob' to '*' to load every file)")
        if not documents:
            problems = report.unreadable + [p for p in report.skipped
                                            if p.file not in {u.file for u in report.unreadable}]
            why = (f"; {len(problems)} file(s) unreadable or skipped: "
                   + "; ".join(f"{p.file}: {p.reason}" for p in problems[:5])
                   if problems else "")
            raise NodeConfigError(f"load.files: no documents loaded from path '{root}' with "
                                  f"glob '{params.glob}' (extensions "
                                  f"{', '.join(params.extensions)}){why}"
                                  + (f"; {report.left_out()}" if report.not_matched else ""))
        return {"documents": documents, "report": report}
