"""Request and response models generated from a graph's declared inputs and outputs."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from modrag_studio.engine.document import GraphDocument
from modrag_studio.engine.executor import INPUT_TYPE, OUTPUT_TYPE

MAX_INPUT_CHARS = 100_000


def _title(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_") if part)


def request_model(doc: GraphDocument, names: Collection[str] | None = None) -> type[BaseModel]:
    """A model with one string field per ``graph.input`` node (required unless it has a default);
    ``names``: only these inputs (the ones a client may choose)."""
    fields: dict[str, Any] = {}
    for spec in doc.nodes:
        if spec.type != INPUT_TYPE:
            continue
        name = str(spec.params.get("name", "query"))
        if names is not None and name not in names:
            continue
        default = spec.params.get("default")
        description = str(spec.params.get("description", "")) or f"graph input '{name}'"
        if default is None:
            fields[name] = (str, Field(..., description=description, max_length=MAX_INPUT_CHARS))
        else:
            fields[name] = (str, Field(str(default), description=description,
                                       max_length=MAX_INPUT_CHARS))
    model_name = f"{_title(doc.metadata.name) or 'Graph'}Inputs"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


def outputs_model(doc: GraphDocument) -> type[BaseModel]:
    names = [str(s.params.get("name", "answer")) for s in doc.nodes if s.type == OUTPUT_TYPE]
    fields: dict[str, Any] = {
        name: (Any, Field(None, description=f"graph output '{name}'")) for name in names
    }
    return create_model(f"{_title(doc.metadata.name) or 'Graph'}Outputs", **fields)


def response_model(doc: GraphDocument) -> type[BaseModel]:
    return create_model(
        f"{_title(doc.metadata.name) or 'Graph'}Result",
        run_id=(str, ...),
        status=(str, Field(..., description="ok, failed or cancelled")),
        outputs=(outputs_model(doc), ...),
        errors=(list[dict[str, str]], Field(default_factory=list)),
        trace=(dict[str, Any] | None, None),
    )


