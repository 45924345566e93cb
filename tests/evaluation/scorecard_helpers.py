"""The scorecard tests' tiny corpus: the generation tests' five documents, a BM25 graph that
passes one passage on (so questions about two documents lose one), and a set of such
questions on which passing two on is significantly better."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.evaluation.test_evalset_generate import DOCS
from tests.tiny_rag import tiny_rag_graph

QUESTIONS = [
    ("How often is the lubrication pump LP-07 serviced, and who replaces the seal kit "
     "HS-40?", ["pumps.md", "press.md"], ["500 operating hours", "Voss Hydraulik"]),
    ("Who leads the maintenance team, and where do CNC-A01 and CNC-A02 report their spindle "
     "temperature?", ["people.md", "hall.md"], ["Ingrid Holm", "Telemetry Hub"]),
    ("Which supplier replaces the seal kit of the hydraulic press, and what do the machining "
     "centres report?", ["press.md", "hall.md"], ["Voss Hydraulik", "spindle temperature"]),
    ("Who mentors Tomas Reyes, and how often is the grease reservoir of LP-07 refilled?",
     ["people.md", "pumps.md"], ["Ingrid Holm", "at each service"]),
    ("What does the press PR-300 stamp, and who leads the Eastbank maintenance team?",
     ["press.md", "people.md"], ["steel brackets", "Ingrid Holm"]),
    ("Where do the five-axis machining centres report, and how often is the inlet filter of "
     "the lubrication pump cleaned?", ["hall.md", "pumps.md"], ["Telemetry Hub",
                                                                "at each service"]),
    ("How often is the lubrication pump LP-07 serviced?", ["pumps.md"],
     ["500 operating hours"]),
    ("Which company replaces the seal kit HS-40?", ["press.md"], ["Voss Hydraulik"]),
    ("Who leads the maintenance team at the Eastbank plant?", ["people.md"], ["Ingrid Holm"]),
    ("Where do the machining centres report their spindle temperature?", ["hall.md"],
     ["Telemetry Hub"]),
    ("Who looks after LP-07 since 2021, and which hall holds CNC-A02?",
     ["people.md", "hall.md"], ["Tomas Reyes", "machining hall"]),
    ("Who supplies HS-40 kits and who mentors Tomas Reyes?", ["press.md", "people.md"],
     ["Voss Hydraulik", "Ingrid Holm"]),
]
UNANSWERABLE = "What is the purchase price of the hydraulic press PR-300?"


def scorecard_graph(folder: Path, *, backend: str = "embedded") -> dict[str, Any]:
    """The tiny BM25 graph (top_k 1) on the five documents, its answers kept short."""
    data = tiny_rag_graph(folder, DOCS, backend=backend, name="tiny")
    for node in data["nodes"]:
        if node["id"] == "llm":
            node["params"]["max_tokens"] = 40
    return data


def write_graph(folder: Path, **kwargs: Any) -> Path:
    path = folder / "graph.json"
    path.write_text(json.dumps(scorecard_graph(folder, **kwargs)), encoding="utf-8")
    return path


def write_two_document_set(path: Path) -> Path:
    """Twelve answerable questions naming their documents (most of them two) and one
    unanswerable question."""
    rows = [{"id": f"q{n:02d}", "question": q, "expected_evidence": {"doc_ids": docs},
             "expected_facts": facts, "answerable": True}
            for n, (q, docs, facts) in enumerate(QUESTIONS, 1)]
    rows.append({"id": "u01", "question": UNANSWERABLE, "expected_facts": [],
                 "answerable": False})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
