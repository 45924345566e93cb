"""Request and response models generated from a graph's declared inputs and outputs."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.registry import NodeRegistry

MAX_INPUT_CHARS = 100_000


def _title(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_") if part)


def request_model(
    doc: GraphDocument,
    names: Collection[str] | None = None,
    *,
    registry: NodeRegistry,
) -> type[BaseModel]:
    """A model with one string field per graph input (required unless it has a default);
    ``names``: only these inputs (the ones a client may choose)."""
    fields: dict[str, Any] = {}
    for port in graph_interface(doc, registry).inputs:
        if port.name in fields:
            continue
        if names is not None and port.name not in names:
            continue
        description = port.description or f"graph input '{port.name}'"
        default = ... if port.default is None else port.default
        fields[port.name] = (str, Field(default, description=description,
                                        max_length=MAX_INPUT_CHARS))
    model_name = f"{_title(doc.metadata.name) or 'Graph'}Inputs"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


def outputs_model(doc: GraphDocument, registry: NodeRegistry) -> type[BaseModel]:
    fields: dict[str, Any] = {
        name: (Any, Field(None, description=f"graph output '{name}'"))
        for name in graph_interface(doc, registry).output_names
    }
    return create_model(f"{_title(doc.metadata.name) or 'Graph'}Outputs", **fields)


def response_model(doc: GraphDocument, registry: NodeRegistry) -> type[BaseModel]:
    return create_model(
        f"{_title(doc.metadata.name) or 'Graph'}Result",
        run_id=(str, ...),
        status=(str, Field(..., description="ok, failed or cancelled")),
        outputs=(outputs_model(doc, registry), ...),
        errors=(list[dict[str, str]], Field(default_factory=list)),
        trace=(dict[str, Any] | None, None),
        recorded=(str | None, Field(None, description="the run's id in the run history, "
                                    "when the request asked to record it")),
    )
