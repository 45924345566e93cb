"""Fixtures of the knowledge-graph tests: the demo corpus as paragraph chunks, a built graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modrag_nodes.kg.build import build_graph
from modrag_nodes.kg.extract_rules import RuleParams, build_extractor, extract_all
from modrag_nodes.kg.store import KGStore, load_store
from modrag_studio.engine.core.datatypes import Chunk

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "resources" / "sample_corpus"
DICTIONARY = CORPUS / "kg_dictionary.json"


def corpus_chunks() -> list[Chunk]:
    """Every paragraph of the demo corpus as one chunk (ids ``file#n``)."""
    chunks = []
    for path in sorted(CORPUS.glob("*_*.md")):
        for i, para in enumerate(p for p in path.read_text("utf-8").split("\n\n") if p.strip()):
            chunks.append(Chunk(chunk_id=f"{path.name}#{i}", doc_id=path.name, text=para))
    return chunks


def topology_questions() -> list[dict]:
    lines = (CORPUS / "topology_questions.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> KGStore:
    extractor, signature = build_extractor(RuleParams(dictionary=str(DICTIONARY)))
    extraction = extract_all(extractor, corpus_chunks(), signature)
    path = tmp_path_factory.mktemp("kg") / "corpus.kg.json"
    build_graph(extraction, path)
    return load_store(path)
