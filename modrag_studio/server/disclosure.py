"""What a client of ``modrag serve`` / ``modrag mcp`` reads of the server: every error text and
path goes through ``ClientView`` (``engine.core.redact``: no keys, paths relative to the graph's
folder or the data root, other absolute paths shortened to their file name)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.redact import for_client, scrub
from modrag_studio.engine.core.registry import NodeRegistry


@dataclass(frozen=True)
class ClientView:
    roots: tuple[Path, ...] = ()

    @classmethod
    def of(cls, doc: GraphDocument, registry: NodeRegistry, data_root: Path | None = None,
           fixed: Mapping[str, Any] | None = None) -> ClientView:
        """Paths shown relative to the data root, else to the folder a path input names
        (the operator's ``fixed`` values and the graph's defaults: a cited chunk's
        ``source`` reads ``maint.md``, not ``/srv/corpus/maint.md``), else to the graph's
        folder."""
        roots = [data_root] if data_root is not None else []
        defaults = [port.default for port in graph_interface(doc, registry).inputs]
        for value in [*(fixed or {}).values(), *defaults]:
            if isinstance(value, str) and value.startswith("/") and Path(value).is_dir() \
                    and (data_root is None or not Path(value).is_relative_to(data_root)):
                roots.append(Path(value))  # under the data root: relative to the root
        if doc.source_path is not None:
            roots.append(doc.source_path.parent)
        return cls(tuple(Path(r) for r in roots))

    def text(self, text: str) -> str:
        return for_client(text, self.roots)

    def value(self, value: Any) -> Any:
        """``value`` (JSON) with every string that names an absolute path made relative or
        shortened, and every string scrubbed of secrets."""
        if isinstance(value, str):
            return self.text(value) if value.startswith(("/", "~")) else scrub(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def errors(self, errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**e, "message": self.text(str(e.get("message", "")))} for e in errors]

    def health(self, report: dict[str, Any]) -> dict[str, Any]:
        """A health report (``HealthReport.model_dump()``) with its details shown to a client."""
        def part(component: dict[str, Any]) -> dict[str, Any]:
            return {**component, "detail": self.text(str(component.get("detail", "")))}

        return {**report, "graph": part(report["graph"]),
                "nodes": {k: part(v) for k, v in report.get("nodes", {}).items()}}
