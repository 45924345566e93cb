"""Rule-based entity and relation extraction: no language model needed.

Entities come from a user dictionary (canonical name, type, aliases in any language), from
identifier patterns (part and machine numbers such as ``SKF-6205`` or ``CNC-A01``; a
corpus's own schemes, such as the demo corpus's contract numbers ``HT-2024-0892``, come
from its dictionary's ``id_patterns``, which win over the built-in ones) and from service
intervals (``every 3 months``, ``每3个月``).
Relations come from trigger phrases between mentions in one sentence: in
"The Order Service depends on the Inventory Service and the Payment Gateway" the trigger
``depends on`` links the clause's first mention before it to the enumerated mentions after it.
``reverse_triggers`` flip the direction ("王芳的导师是张敏" gives ``张敏 mentor_of 王芳``).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.kg.aliases import display, normalize
from modrag_nodes.kg.contracts import Entity, GraphExtraction, Relation
from modrag_nodes.kg.store import text_hash
from modrag_nodes.text.numbers import parse_number
from modrag_studio.engine.cache.node_cache import stable_hash
from modrag_studio.engine.core.node import (
    Chunk,
    FilePath,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
    resolve_path,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]

DEFAULT_RELATIONS: dict[str, dict[str, Any]] = {
    "depends_on": {"label": "depends on", "triggers": ["depends on", "relies on", "依赖"]},
    "calls": {"label": "calls", "triggers": ["calls", "调用"]},
    "affects": {"label": "affects", "triggers": ["affects", "impacts", "影响"]},
    "part_of": {"label": "part of", "triggers": ["is part of", "属于"]},
    "located_at": {"label": "located at", "triggers": ["is located at", "位于"]},
    "has_part": {"label": "has part", "triggers": ["is fitted with", "配有", "装有"]},
    "caused_by": {"label": "caused by", "triggers": ["is caused by", "的原因是"],
                  "reverse_triggers": ["causes", "leads to", "导致"]},
    "responsible_for": {"label": "responsible for",
                        "triggers": ["is responsible for", "负责"]},
}

# A corpus's own id schemes (the demo corpus's contracts HT-2024-0892) go in its dictionary's
# "id_patterns", which come before these.
DEFAULT_ID_PATTERNS: list[dict[str, str]] = [
    {"pattern": r"\b(?=[A-Z\-]*\d)[A-Z]{2,5}(?:-[A-Z0-9]{1,8}){1,3}\b", "type": "Identifier"},
]

_EN_INTERVAL = re.compile(
    r"every\s+(\d+)\s+(operating hours|hours|days|weeks|months|years|hour|day|week|month|year)",
    re.IGNORECASE)
_ZH_INTERVAL = re.compile(
    r"每\s*(\d+|[一二两三四五六七八九十]+)\s*(个月|月|周|天|年|运行小时|小时)")
_ZH_UNITS = {"个月": "months", "月": "months", "周": "weeks", "天": "days", "年": "years",
             "运行小时": "operating hours", "小时": "hours"}
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n\s*\n|\n(?=#)")
_CLAUSE = re.compile(r"[,，:：(（]|\b(?:which|that|who|whose)\b", re.IGNORECASE)
_ENUM_GAP = re.compile(
    r"^\s*(?:,|、|and|or|as well as|和|及|与|以及|或)?\s*(?:and|or)?\s*(?:the|a|an)?\s*$",
    re.IGNORECASE)
_FIRST_GAP = re.compile(r"^[^,，;；:：()（）]{0,30}$")


class DictEntity(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    type: str = "Entity"
    aliases: list[str] = Field(default_factory=list)


class IdPattern(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str
    type: str = "Identifier"


class RelationRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = ""
    triggers: list[str] = Field(default_factory=list)
    reverse_triggers: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    name: str
    type: str
    surface: str


@dataclass(frozen=True)
class Trigger:
    start: int
    end: int
    relation: str
    reverse: bool


def _phrase_pattern(phrase: str) -> str:
    """A regex for a phrase: flexible whitespace, word boundaries at ASCII ends."""
    parts = display(phrase).split(" ")
    body = ""
    for i, part in enumerate(parts):
        if i:
            cjk_edge = not (parts[i - 1][-1].isascii() and part[0].isascii())
            body += r"\s*" if cjk_edge else r"\s+"
        body += re.escape(part)
    head = r"(?<![A-Za-z0-9])" if phrase[0].isascii() and phrase[0].isalnum() else ""
    tail = r"(?![A-Za-z0-9])" if phrase[-1].isascii() and phrase[-1].isalnum() else ""
    return head + body + tail


def _alternation(phrases: list[str]) -> re.Pattern[str] | None:
    unique = sorted({p for p in phrases if p.strip()}, key=lambda p: (-len(p), p))
    if not unique:
        return None
    return re.compile("|".join(f"(?:{_phrase_pattern(p)})" for p in unique), re.IGNORECASE)


def interval_name(count: int, unit: str) -> str:
    unit = unit.lower()
    if count == 1 and unit.endswith("s"):
        unit = unit[:-1]
    elif count != 1 and not unit.endswith("s"):
        unit += "s"
    return f"every {count} {unit}"


class RuleExtractor:
    """Finds mentions and trigger-phrase relations in text (see module docstring)."""

    def __init__(self, entities: list[DictEntity], relations: dict[str, RelationRule],
                 id_patterns: list[IdPattern], intervals: bool = True) -> None:
        self.known: dict[str, tuple[str, str]] = {}
        self.aliases: dict[str, str] = {}
        surfaces: list[str] = []
        for entry in entities:
            name = display(entry.name)
            for surface in [entry.name, *entry.aliases]:
                self.known.setdefault(normalize(surface), (name, entry.type))
                surfaces.append(display(surface))
                if display(surface) != name:
                    self.aliases[display(surface)] = name
        self.entity_aliases = {display(e.name): [display(a) for a in e.aliases] for e in entities}
        self._names = _alternation(surfaces)
        self._ids = [(re.compile(p.pattern), p.type) for p in id_patterns]
        self.intervals = intervals
        self.labels = {rel: rule.label or rel.replace("_", " ") for rel, rule in relations.items()}
        trigger_map: dict[str, tuple[str, bool]] = {}
        for rel, rule in relations.items():
            for phrase in rule.triggers:
                trigger_map[normalize(phrase)] = (rel, False)
            for phrase in rule.reverse_triggers:
                trigger_map[normalize(phrase)] = (rel, True)
        self._trigger_map = trigger_map
        self._triggers = _alternation([p for r in relations.values()
                                       for p in (*r.triggers, *r.reverse_triggers)])

    def mentions(self, text: str) -> list[Mention]:
        """Non-overlapping mentions, leftmost-longest, dictionary names before patterns."""
        found: list[tuple[int, int, int, str, str]] = []
        if self._names is not None:
            for m in self._names.finditer(text):
                name, kind = self.known.get(normalize(m.group()), (display(m.group()), "Entity"))
                found.append((m.start(), m.end(), 0, name, kind))
        for pattern, kind in self._ids:
            for m in pattern.finditer(text):
                name, known_kind = self.known.get(normalize(m.group()), (m.group(), kind))
                found.append((m.start(), m.end(), 1, name, known_kind))
        if self.intervals:
            for m in _EN_INTERVAL.finditer(text):
                found.append((m.start(), m.end(), 1, interval_name(int(m[1]), m[2]), "Interval"))
            for m in _ZH_INTERVAL.finditer(text):
                name = interval_name(int(parse_number(m[1]) or 0), _ZH_UNITS[m[2]])
                found.append((m.start(), m.end(), 1, name, "Interval"))
        found.sort(key=lambda f: (f[0], -(f[1] - f[0]), f[2]))
        chosen: list[Mention] = []
        end = -1
        for start, stop, _, name, kind in found:
            if start >= end:
                chosen.append(Mention(start, stop, name, kind, text[start:stop]))
                end = stop
        return chosen

    def triggers(self, text: str, mentions: list[Mention]) -> list[Trigger]:
        if self._triggers is None:
            return []
        result = []
        for m in self._triggers.finditer(text):
            if any(x.start < m.end() and m.start() < x.end for x in mentions):
                continue
            rel, reverse = self._trigger_map[normalize(m.group())]
            result.append(Trigger(m.start(), m.end(), rel, reverse))
        return result

    def sentence_relations(self, sentence: str) -> tuple[list[Mention], list[tuple[str, str, str]]]:
        mentions = self.mentions(sentence)
        triggers = self.triggers(sentence, mentions)
        subjects = [self._subject(sentence, mentions, triggers, i) for i in range(len(triggers))]
        triples: list[tuple[str, str, str]] = []
        for i, trigger in enumerate(triggers):
            subject = subjects[i]
            if subject is None:
                continue
            next_start = triggers[i + 1].start if i + 1 < len(triggers) else len(sentence)
            next_subject = subjects[i + 1] if i + 1 < len(triggers) else None
            for obj in self._objects(sentence, mentions, trigger, next_start, next_subject):
                source, target = (obj, subject[0]) if trigger.reverse else (subject[0], obj)
                if source.name != target.name:
                    triples.append((source.name, trigger.relation, target.name))
        return mentions, triples

    @staticmethod
    def _subject(text: str, mentions: list[Mention], triggers: list[Trigger], index: int
                 ) -> tuple[Mention, bool] | None:
        """The trigger's subject and whether it lies in the trigger's own clause."""
        trigger = triggers[index]
        floor = triggers[index - 1].end if index else 0
        boundaries = [m.end() for m in _CLAUSE.finditer(text, floor, trigger.start)]
        clause_start = max([floor, *boundaries])
        own = [m for m in mentions if clause_start <= m.start and m.end <= trigger.start]
        if own:
            return own[0], True
        before = [m for m in mentions if floor <= m.start and m.end <= trigger.start]
        return (before[-1], False) if before else None

    @staticmethod
    def _objects(text: str, mentions: list[Mention], trigger: Trigger, stop: int,
                 next_subject: tuple[Mention, bool] | None) -> list[Mention]:
        after = [m for m in mentions if m.start >= trigger.end and m.end <= stop]
        if next_subject is not None and next_subject[1]:
            after = [m for m in after if m != next_subject[0]]
        if not after or not _FIRST_GAP.match(text[trigger.end:after[0].start]):
            return []
        objects = [after[0]]
        for previous, current in zip(after, after[1:], strict=False):
            if not _ENUM_GAP.match(text[previous.end:current.start]):
                break
            objects.append(current)
        return objects

    def extract(self, chunk: Chunk) -> tuple[list[Entity], list[Relation]]:
        text = unicodedata.normalize("NFKC", chunk.text)
        entities: dict[str, Entity] = {}
        relations: dict[tuple[str, str, str], Relation] = {}
        for sentence in _SENTENCES.split(text):
            if not sentence or not sentence.strip():
                continue
            mentions, triples = self.sentence_relations(sentence)
            for m in mentions:
                entity = entities.setdefault(m.name, Entity(
                    name=m.name, type=m.type, chunk_ids=[chunk.chunk_id],
                    aliases=list(self.entity_aliases.get(m.name, []))))
                surface = display(m.surface)
                if surface != m.name and surface not in entity.aliases:
                    entity.aliases.append(surface)
            for source, rel, target in triples:
                relations.setdefault((source, rel, target), Relation(
                    source=source, relation=rel, target=target, chunk_ids=[chunk.chunk_id]))
        return list(entities.values()), list(relations.values())


def chunk_record(chunk: Chunk) -> dict[str, Any]:
    return chunk.model_dump(mode="json")


def extract_all(extractor: RuleExtractor, chunks: list[Chunk], signature: str,
                ctx: NodeContext | None = None, keep_text: bool = True) -> GraphExtraction:
    result = GraphExtraction(extractor=signature, relation_labels=dict(extractor.labels),
                             aliases=dict(extractor.aliases))
    for i, chunk in enumerate(chunks):
        entities, relations = extractor.extract(chunk)
        result.entities.extend(entities)
        result.relations.extend(relations)
        result.chunk_hashes[chunk.chunk_id] = text_hash(chunk.text)
        if keep_text:
            result.chunks[chunk.chunk_id] = chunk_record(chunk)
        if ctx is not None and i % 50 == 0:
            ctx.progress(i + 1, len(chunks), "extracting")
            ctx.check_cancelled()
    return result


def resolve_file(value: str, param: str) -> Path:
    """A file relative to the graph's folder, else to the project folder; raises naming the
    param."""
    return _resolve(value, param, Path.is_file, "file")


def resolve_dir(value: str, param: str) -> Path:
    """A folder relative to the graph's folder, else to the project folder; raises naming
    the param."""
    return _resolve(value, param, Path.is_dir, "folder")


def _resolve(value: str, param: str, found: Callable[[Path], bool], noun: str) -> Path:
    path = resolve_path(value)
    for candidate in (path, PROJECT_ROOT / path):
        if found(candidate):
            return candidate
    raise NodeConfigError(f"param '{param}': {noun} not found: {value}")


def read_dictionary(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise NodeConfigError(f"param 'dictionary': cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise NodeConfigError(f"param 'dictionary': {path} must hold a JSON object")
    return data


class RuleParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dictionary: FilePath = Field("", description="JSON file of known entities (name, type, "
                                 "aliases) and relation triggers (see kg_dictionary.json)")
    entities: list[DictEntity] = Field(default_factory=list,
                                       description="Extra known entities")
    relations: dict[str, RelationRule] = Field(
        default_factory=dict, description="Extra or replacing relation triggers by relation")
    use_default_relations: bool = Field(True, description="Start from the built-in triggers")
    id_patterns: list[IdPattern] = Field(
        default_factory=lambda: [IdPattern(**p) for p in DEFAULT_ID_PATTERNS],
        description="Regular expressions for identifiers and the entity type they give")
    intervals: bool = Field(True, description="Recognise 'every 3 months' / '每3个月'")
    keep_chunk_text: bool = Field(True, description="Store chunk texts in the graph file")


def build_extractor(params: RuleParams) -> tuple[RuleExtractor, str]:
    """The extractor for these params and its signature (changes when the rules change)."""
    entities = list(params.entities)
    relations: dict[str, RelationRule] = {}
    if params.use_default_relations:
        relations = {k: RelationRule(**v) for k, v in DEFAULT_RELATIONS.items()}
    patterns = list(params.id_patterns)
    data: dict[str, Any] = {}
    if params.dictionary:
        data = read_dictionary(resolve_file(params.dictionary, "dictionary"))
        try:
            entities = [DictEntity(**e) for e in data.get("entities", [])] + entities
            relations.update({k: RelationRule(**v) for k, v in data.get("relations", {}).items()})
            patterns[:0] = [IdPattern(**p) for p in data.get("id_patterns", [])]
        except (TypeError, ValueError) as exc:
            raise NodeConfigError(f"param 'dictionary': invalid entry: {exc}") from exc
    relations.update(params.relations)
    for item in patterns:
        try:
            re.compile(item.pattern)
        except re.error as exc:
            raise NodeConfigError(f"param 'id_patterns': bad pattern {item.pattern!r}: {exc}"
                                  ) from exc
    signature = "rules:" + stable_hash([params.model_dump(mode="json"), data])[:16]
    return RuleExtractor(entities, relations, patterns, params.intervals), signature


class ExtractRules(NodeType):
    type_id = "kg.extract_rules"
    corpus_params = ("dictionary",)
    title = "Extract entities (rules)"
    category = "Knowledge graph"
    description = ("Finds entities (dictionary, identifier patterns, intervals) and relations "
                   "(trigger phrases between mentions) in chunks, without a language model.")
    Params = RuleParams
    inputs = (InputPort("chunks", list[Chunk], description="Chunks to read"),)
    outputs = (OutputPort("extraction", GraphExtraction, "Entities and relations per chunk"),)

    def fingerprint(self, params: RuleParams, inputs: Any, run_inputs: Any) -> str | None:
        if not params.dictionary:
            return None
        return text_hash(resolve_file(params.dictionary, "dictionary").read_text("utf-8"))

    def run(self, ctx: NodeContext, params: RuleParams, chunks: list[Chunk]) -> dict[str, Any]:
        extractor, signature = build_extractor(params)
        result = extract_all(extractor, chunks, signature, ctx, params.keep_chunk_text)
        ctx.note(entities=len({e.name for e in result.entities}),
                 relations=len({(r.source, r.relation, r.target) for r in result.relations}),
                 chunks=len(chunks))
        return {"extraction": result}
