"""``kg.extract_llm``: entities and relations per chunk, asked of a chat model as JSON.

Model output is messy; ``parse_llm_json`` reads code fences, trailing commas, single quotes,
Python literals, unquoted keys, comments and output cut off mid-way (the last complete items
are kept). Items are validated one by one with pydantic; invalid ones are counted, not fatal.
Replies are cached per chunk text (temperature 0 only) in ``<data dir>/kg/llm_extract_cache``,
so an incremental update asks the model only about changed chunks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from modrag_nodes.kg.aliases import display
from modrag_nodes.kg.contracts import Entity, GraphExtraction, Relation
from modrag_nodes.kg.store import text_hash
from modrag_nodes.llm.client import LLMSpec, chat
from modrag_studio.engine.cache.node_cache import stable_hash
from modrag_studio.engine.core.node import (
    ChatMessage,
    Chunk,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
)

PROMPT = """Extract the entities and the relations between them from the text.
Entity types: {entity_types}.
{relation_hint}Reply with JSON only, in this form:
{{"entities": [{{"name": "...", "type": "..."}}],
 "relations": [{{"source": "...", "relation": "...", "target": "..."}}]}}
Use entity names exactly as written in the text. Relations are short verbs such as
"depends on", "part of", "caused by".

Text:
{text}"""

_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)(?:```|$)", re.DOTALL)


class LLMEntity(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(min_length=1, max_length=200)
    type: str = "Entity"

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"name": value}
        if isinstance(value, dict):
            value = dict(value)
            for key in ("entity", "text", "label_text"):
                if "name" not in value and key in value:
                    value["name"] = value[key]
            for key in ("entity_type", "label", "category", "kind"):
                if "type" not in value and key in value:
                    value["type"] = value[key]
            if value.get("type") in (None, ""):
                value["type"] = "Entity"
        return value


class LLMRelation(BaseModel):
    model_config = ConfigDict(extra="ignore")
    source: str = Field(min_length=1, max_length=200)
    relation: str = Field(min_length=1, max_length=100)
    target: str = Field(min_length=1, max_length=200)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, value: Any) -> Any:
        if isinstance(value, list | tuple) and len(value) == 3:
            return {"source": value[0], "relation": value[1], "target": value[2]}
        if isinstance(value, dict):
            value = dict(value)
            names = {"source": ("subject", "head", "from", "src"),
                     "relation": ("predicate", "type", "label", "rel", "relationship"),
                     "target": ("object", "tail", "to", "dst")}
            for field, options in names.items():
                for key in options:
                    if field not in value and key in value:
                        value[field] = value[key]
        return value


def _strip_fences(text: str) -> str:
    match = _FENCE.search(text)
    return match.group(1) if match else text


def _repair(block: str) -> str:
    text = re.sub(r"^\s*//[^\n]*$", "", block, flags=re.MULTILINE)
    if "'" in text and text.count('"') < 2:
        text = re.sub(r"'((?:[^'\\]|\\.)*)'", lambda m: json.dumps(m.group(1)), text)
    text = re.sub(r"\bTrue\b", "true", text)
    text = re.sub(r"\bFalse\b", "false", text)
    text = re.sub(r"\bNone\b", "null", text)
    text = re.sub(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:", r'\1"\2":', text)
    return re.sub(r",\s*([}\]])", r"\1", text)


def _closers(text: str) -> tuple[str, bool]:
    """The brackets that close ``text`` and whether it ends inside a string."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and stack:
            stack.pop()
    return "".join(reversed(stack)), in_string


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(_repair(text))


def parse_llm_json(text: str) -> Any:
    """The JSON value in a model reply (see module docstring); raises ValueError when none."""
    body = _strip_fences(text)
    starts = [i for i in (body.find("{"), body.find("[")) if i >= 0]
    if not starts:
        raise ValueError("no JSON object or array in the reply")
    body = body[min(starts):].strip()
    closers, in_string = _closers(body)
    if not closers and not in_string:
        end = len(body)
        while end > 0:
            try:
                return _loads(body[:end])
            except json.JSONDecodeError:
                end = max(body.rfind("}", 0, end), body.rfind("]", 0, end))
                end = end + 1 if end >= 0 else 0
    cuts = sorted({i for i, c in enumerate(body) if c in ",}]"}, reverse=True)[:400]
    for cut in cuts:
        head = body[: cut + 1] if body[cut] in "}]" else body[:cut]
        closers, in_string = _closers(head)
        if in_string:
            continue
        try:
            return _loads(head + closers)
        except json.JSONDecodeError:
            continue
    raise ValueError("the reply's JSON could not be repaired")


def parse_extraction(text: str) -> tuple[list[LLMEntity], list[LLMRelation], int]:
    """Entities, relations and the number of invalid items in a reply."""
    data = parse_llm_json(text)
    if isinstance(data, list):
        data = {"entities": [x for x in data if isinstance(x, dict) and "name" in x],
                "relations": [x for x in data if not (isinstance(x, dict) and "name" in x)]}
    if not isinstance(data, dict):
        raise ValueError("the reply's JSON is neither an object nor a list")
    entities: list[LLMEntity] = []
    relations: list[LLMRelation] = []
    invalid = 0
    for item in data.get("entities") or data.get("nodes") or []:
        try:
            entities.append(LLMEntity.model_validate(item))
        except ValidationError:
            invalid += 1
    for item in data.get("relations") or data.get("edges") or data.get("triples") or []:
        try:
            relations.append(LLMRelation.model_validate(item))
        except ValidationError:
            invalid += 1
    return entities, relations, invalid


def relation_key(text: str) -> str:
    return re.sub(r"[^\w]+", "_", display(text).lower()).strip("_") or "related_to"


class LLMExtractParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    entity_types: list[str] = Field(
        default_factory=lambda: ["Person", "Organization", "Site", "Service", "Database",
                                 "Machine", "Part", "Fault", "Contract"],
        description="Entity types offered to the model")
    relation_types: list[str] = Field(default_factory=list,
                                      description="Relation names to prefer (empty: free)")
    prompt: str = Field(PROMPT, json_schema_extra={"multiline": True},
                        description="Prompt ({entity_types}, {relation_hint}, {text})")
    max_chunk_chars: int = Field(3000, ge=100, description="Longer chunk texts are cut")
    keep_chunk_text: bool = Field(True, description="Store chunk texts in the graph file")
    use_cache: bool = Field(True, description="Reuse replies for unchanged chunks (temp. 0)")


def _cache_file(ctx: NodeContext | None) -> Path | None:
    return Path(ctx.work_dir) / "kg" / "llm_extract_cache.jsonl" if ctx is not None else None


def _read_cache(path: Path | None) -> dict[str, str]:
    if path is None or not path.is_file():
        return {}
    cache: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            item = json.loads(line)
            cache[item["key"]] = item["reply"]
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return cache


def extract_with_llm(chunks: list[Chunk], llm: LLMSpec, params: LLMExtractParams,
                     ctx: NodeContext | None = None) -> tuple[GraphExtraction, dict[str, int]]:
    hint = (f"Prefer these relations: {', '.join(params.relation_types)}.\n"
            if params.relation_types else "")
    signature = "llm:" + stable_hash([llm.model_dump(mode="json", exclude={"timeout_s",
                                                                          "retries"}),
                                      params.prompt, params.entity_types,
                                      params.relation_types, params.max_chunk_chars])[:16]
    cache_path = _cache_file(ctx) if params.use_cache and llm.temperature == 0 else None
    cache = _read_cache(cache_path)
    result = GraphExtraction(extractor=signature)
    stats = {"chunks": len(chunks), "cached": 0, "failed": 0, "invalid_items": 0}
    for i, chunk in enumerate(chunks):
        if ctx is not None:
            ctx.check_cancelled()
            ctx.progress(i, len(chunks), f"chunk {i + 1}/{len(chunks)}")
        prompt = params.prompt.format(entity_types=", ".join(params.entity_types),
                                      relation_hint=hint, text=chunk.text[:params.max_chunk_chars])
        key = text_hash(signature + prompt)
        reply = cache.get(key)
        if reply is None:
            reply = chat(llm, [ChatMessage(role="user", content=prompt)], ctx=ctx,
                         stream=False).text
            if cache_path is not None:
                cache_path.parent.mkdir(parents=True, exist_ok=True)
                with cache_path.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps({"key": key, "reply": reply}, ensure_ascii=False)
                                 + "\n")
        else:
            stats["cached"] += 1
        try:
            entities, relations, invalid = parse_extraction(reply)
        except ValueError as exc:
            stats["failed"] += 1
            if ctx is not None:
                ctx.warn(f"chunk {chunk.chunk_id}: {exc}")
            entities, relations, invalid = [], [], 0
        stats["invalid_items"] += invalid
        _merge(result, chunk, entities, relations)
        result.chunk_hashes[chunk.chunk_id] = text_hash(chunk.text)
        if params.keep_chunk_text:
            result.chunks[chunk.chunk_id] = chunk.model_dump(mode="json")
    return result, stats


def _merge(result: GraphExtraction, chunk: Chunk, entities: list[LLMEntity],
           relations: list[LLMRelation]) -> None:
    names = {display(e.name) for e in entities}
    for entity in entities:
        result.entities.append(Entity(name=display(entity.name), type=display(entity.type),
                                      chunk_ids=[chunk.chunk_id]))
    for relation in relations:
        for end in (relation.source, relation.target):
            if display(end) not in names:
                names.add(display(end))
                result.entities.append(Entity(name=display(end), chunk_ids=[chunk.chunk_id]))
        key = relation_key(relation.relation)
        result.relation_labels.setdefault(key, display(relation.relation).lower())
        result.relations.append(Relation(source=display(relation.source), relation=key,
                                         target=display(relation.target),
                                         chunk_ids=[chunk.chunk_id]))


class ExtractLLM(NodeType):
    type_id = "kg.extract_llm"
    title = "Extract entities (LLM)"
    category = "Knowledge graph"
    description = ("Asks a chat model for the entities (name, type) and relations (source, "
                   "relation, target) of each chunk as JSON; tolerant of messy replies.")
    Params = LLMExtractParams
    inputs = (
        InputPort("chunks", list[Chunk], description="Chunks to read"),
        InputPort("llm", LLMSpec, description="The chat model"),
    )
    outputs = (OutputPort("extraction", GraphExtraction, "Entities and relations per chunk"),)

    def run(self, ctx: NodeContext, params: LLMExtractParams, chunks: list[Chunk],
            llm: LLMSpec) -> dict[str, Any]:
        if "{text}" not in params.prompt:
            raise NodeConfigError("param 'prompt' must contain {text}")
        try:
            result, stats = extract_with_llm(chunks, llm, params, ctx)
        except (KeyError, IndexError) as exc:
            raise NodeConfigError(f"param 'prompt': unknown placeholder {exc}") from exc
        if chunks and stats["failed"] == len(chunks):
            ctx.warn("no reply could be read as JSON: check the model and the prompt")
        ctx.note(entities=len({e.name for e in result.entities}),
                 relations=len({(r.source, r.relation, r.target) for r in result.relations}),
                 **stats)
        return {"extraction": result}
