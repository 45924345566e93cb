"""Output parser: plain text or JSON (validated against a schema), citations checked.

Citations are bracketed references: ``[doc_id]`` (a document or chunk id among the evidence,
or its source file name) or ``[n]`` (the n-th evidence block, as the prompt builder numbers
them). The forms small models write are accepted too: ``[1][2]``, ``[1, 2]``, ``[1-3]``,
``[^1]``, ``[Evidence 1]``, full-width ``【1】`` / ``［1］``, and ``(1)`` / ``（1）`` when every
number is an evidence block and it does not start a line (a numbered list). A numeric
reference outside the evidence blocks, or an id not among the evidence, is invalid.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.generation.messy_parsing import extract_json
from modrag_nodes.generation.prompt import REFUSAL
from modrag_nodes.generation.schema_check import schema_errors
from modrag_nodes.generation.template_echo import instruction_text, strip_echo
from modrag_studio.engine.cache.node_cache import stable_hash
from modrag_studio.engine.core.node import (
    Answer,
    Citation,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OptionalFilePath,
    OutputPort,
    Prompt,
    Query,
    ScoredChunk,
    resolve_path,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

_BRACKET = re.compile(r"(?<!\[)\[([^\[\]\n]{1,120})\](?!\()|【([^【】\n]{1,120})】"
                      r"|［([^［］\n]{1,120})］")
_PAREN = re.compile(r"(?<![\w(（])[(（]\s*(\d{1,3}(?:\s*[,，;、]\s*\d{1,3})*)\s*[)）]")
_REF_PREFIX = re.compile(r"^(?:\^|doc(?:ument)?|source|chunk|ref|evidence|block|证据|文档)"
                         r"\s*[:#：]?\s*", re.IGNORECASE)
_RANGE = re.compile(r"^(\d{1,3})\s*[-–~]\s*(\d{1,3})$")
_SPLIT = re.compile(r"[,;，；、]|\band\b")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def extract_citations(text: str, evidence: list[ScoredChunk]) -> list[Citation]:
    """Every bracketed reference in ``text``, in order, checked against ``evidence``."""
    by_doc = {item.doc_id: item for item in reversed(evidence)}
    for item in reversed(evidence):
        source = Path(item.chunk.source or "").name
        for name in filter(None, (source, source.rsplit(".", 1)[0])):
            by_doc.setdefault(name, item)
    by_chunk = {item.chunk_id: item for item in evidence}
    citations: list[Citation] = []
    seen: set[str] = set()
    for ref in _references(text, len(evidence)):
        known = ref in by_doc or ref in by_chunk
        if not ref or ref in seen or not (known or _looks_like_ref(ref)):
            continue
        seen.add(ref)
        citations.append(_resolve(ref, evidence, by_doc, by_chunk))
    return citations


def _references(text: str, blocks: int) -> list[str]:
    """The references in ``text`` in reading order (bracket forms, then checked ``(n)``)."""
    found: list[tuple[int, str]] = []
    for match in _BRACKET.finditer(text):
        inner = next(group for group in match.groups() if group is not None)
        found.extend((match.start(), ref) for ref in _split_refs(inner))
    for match in _PAREN.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if not text[line_start:match.start()].strip():
            continue  # "(1) first step": a numbered list, not a citation
        numbers = [n for n in _SPLIT.split(match.group(1)) if n.strip()]
        if numbers and all(1 <= int(n) <= blocks for n in numbers):
            found.extend((match.start(), n.strip()) for n in numbers)
    return [ref for _, ref in sorted(found, key=lambda pair: pair[0])]


def _split_refs(inner: str) -> list[str]:
    refs: list[str] = []
    for part in _SPLIT.split(inner):
        ref = _REF_PREFIX.sub("", part.strip()).strip()
        span = _RANGE.match(ref)
        if span and int(span.group(1)) <= int(span.group(2)) <= int(span.group(1)) + 20:
            refs.extend(str(n) for n in range(int(span.group(1)), int(span.group(2)) + 1))
        elif ref:
            refs.append(ref)
    return refs


def _looks_like_ref(ref: str) -> bool:
    """An id-like token (no spaces, not a lone letter such as a checkbox's x) or a number."""
    if ref.isdigit():
        return True
    return len(ref) > 1 and not any(ch.isspace() for ch in ref) and len(ref) <= 80


def _resolve(ref: str, evidence: list[ScoredChunk], by_doc: dict[str, ScoredChunk],
             by_chunk: dict[str, ScoredChunk]) -> Citation:
    if ref in by_chunk:
        item = by_chunk[ref]
        return Citation(ref=ref, doc_id=item.doc_id, chunk_id=item.chunk_id, valid=True)
    if ref in by_doc:
        item = by_doc[ref]
        return Citation(ref=ref, doc_id=item.doc_id, chunk_id=item.chunk_id, valid=True)
    if ref.isdigit() and 1 <= int(ref) <= len(evidence):
        item = evidence[int(ref) - 1]
        return Citation(ref=ref, doc_id=item.doc_id, chunk_id=item.chunk_id, valid=True)
    return Citation(ref=ref, valid=False)


class ParserParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: Literal["text", "json"] = Field("text", description="What the model was asked for")
    json_schema: dict[str, Any] | None = Field(
        None, description="json: JSON Schema the object must satisfy")
    json_schema_file: OptionalFilePath = Field(
        None, description="json: read the schema from a file")
    answer_field: str = Field(
        "answer", description="json: the field holding the answer text (else the whole JSON)")
    on_invalid: Literal["fail", "warn"] = Field(
        "fail", description="json: fail the node, or keep the text and warn, when the reply "
                            "has no valid JSON")
    require_citations: bool = Field(False, description="Warn when the answer cites nothing")
    strip_template: bool = Field(
        True, description="Remove prompt-template text the model copied (placeholders such "
                          "as <sentence with the facts>, [block number], instruction lines)")


class AnswerParser(NodeType):
    type_id = "parse.answer"
    key_params = ("format",)
    evidence_role = EvidenceRole("cites", inputs=("answer", "prompt", "evidence"))
    title = "Output parser"
    category = "Generation"
    description = (
        "Turns a model reply into an Answer: plain text or JSON checked against a schema; "
        "extracts [doc_id] / [n] citations and flags those not among the evidence."
    )
    Params = ParserParams
    inputs = (
        InputPort("answer", Answer | str, description="The model's reply"),
        InputPort("prompt", Prompt, required=False,
                  description="The prompt (its evidence numbering resolves [n] citations)"),
        InputPort("evidence", list[ScoredChunk], required=False,
                  description="Evidence to check citations against (else the prompt's)"),
        InputPort("query", Query, required=False, description="Recorded in the answer"),
    )
    outputs = (OutputPort("answer", Answer, "Text or data, citations, invalid citations"),)

    def fingerprint(self, params: ParserParams, inputs: dict[str, Any],
                    run_inputs: dict[str, Any]) -> str | None:
        if params.json_schema_file is None:
            return None  # template_echo's code is in the cache key (code identity)
        return stable_hash(_read_schema(params.json_schema_file))

    def run(self, ctx: NodeContext, params: ParserParams, answer: Answer | str,
            prompt: Prompt | None = None, evidence: list[ScoredChunk] | None = None,
            query: Query | None = None) -> dict[str, Any]:
        base = answer if isinstance(answer, Answer) else Answer(text=str(answer))
        if evidence is None:
            evidence = prompt.evidence if prompt is not None else base.evidence
        raw = _THINK.sub("", base.text).strip()
        if params.strip_template and prompt is not None:
            refusal = REFUSAL if REFUSAL in instruction_text(prompt) else ""
            cleaned, removed = strip_echo(raw, prompt, refusal)
            if removed:
                ctx.note(template_text_removed=removed)
                raw = cleaned or refusal or cleaned
        text, data = raw, None
        if params.format == "json":
            text, data = self._parse_json(ctx, params, raw)
        cite_source = raw if data is None else _strings(data)
        citations = extract_citations(cite_source, evidence)
        invalid = [c.ref for c in citations if not c.valid]
        if invalid:
            ctx.warn(f"citations not among the evidence: {', '.join(invalid)}")
        if params.require_citations and not citations:
            ctx.warn("the answer cites no evidence")
        ctx.note(citations=[c.ref for c in citations], invalid_citations=invalid,
                 evidence_ids=[item.doc_id for item in evidence])
        result = base.model_copy(update={
            "text": text, "data": data, "citations": citations, "invalid_citations": invalid,
            "evidence": evidence,
            "query": (query.original or query.text) if query is not None else base.query,
        })
        return {"answer": result}

    def _parse_json(self, ctx: NodeContext, params: ParserParams,
                    raw: str) -> tuple[str, Any]:
        schema = (_read_schema(params.json_schema_file) if params.json_schema_file
                  else params.json_schema)
        try:
            data = extract_json(raw)
            problems = schema_errors(data, schema) if schema is not None else []
            if problems:
                raise ValueError("the JSON does not match the schema: " + "; ".join(problems))
        except ValueError as exc:
            if params.on_invalid == "fail":
                raise ValueError(f"param 'format' is json: {exc}") from None
            ctx.warn(f"{exc}; the reply is kept as text")
            return raw, None
        if isinstance(data, dict) and isinstance(data.get(params.answer_field), str):
            text = data[params.answer_field]
        else:
            text = json.dumps(data, ensure_ascii=False)
        return text, data


def _strings(data: Any) -> str:
    """All string values (and bare list items) of parsed JSON, one per line."""
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        parts = []
        for key, value in data.items():
            if key.lower() in ("citations", "sources", "refs", "references") and isinstance(
                    value, list):
                parts.extend(f"[{v}]" for v in value if isinstance(v, (str, int)))
            else:
                parts.append(_strings(value))
        return "\n".join(parts)
    if isinstance(data, list):
        return "\n".join(_strings(v) for v in data)
    return ""


def _read_schema(path: str) -> dict[str, Any]:
    file = resolve_path(path)
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NodeConfigError(f"param 'json_schema_file': no file at {file}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NodeConfigError(f"param 'json_schema_file': cannot read {file}: {exc}") from None
