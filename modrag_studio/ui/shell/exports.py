"""Exports: the graph file (JSON), pictures of the canvas (PNG, SVG), DOT, graphviz SVG, Mermaid."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QGraphicsScene

from modrag_studio.engine.core.document import GraphDocument, atomic_write_text, save
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.layout.render import expanded_in_place, to_dot, to_mermaid, to_svg

# kind -> (menu label, file filter, default suffix)
EXPORT_KINDS: dict[str, tuple[str, str, str]] = {
    "json": ("Graph file (JSON)…", "Graph JSON (*.json)", ".json"),
    "json-expanded": ("Graph file, subgraphs expanded (JSON)…", "Graph JSON (*.json)", ".json"),
    "png": ("Canvas as PNG…", "PNG image (*.png)", ".png"),
    "svg": ("Canvas as SVG…", "SVG image (*.svg)", ".svg"),
    "dot": ("Graphviz DOT…", "Graphviz DOT (*.dot *.gv)", ".dot"),
    "graphviz-svg": ("Graphviz SVG…", "SVG image (*.svg)", ".svg"),
    "mermaid": ("Mermaid…", "Mermaid (*.mmd *.md)", ".mmd"),
    "dot-expanded": ("Graphviz DOT, subgraphs expanded…", "Graphviz DOT (*.dot *.gv)", ".dot"),
    "mermaid-expanded": ("Mermaid, subgraphs expanded…", "Mermaid (*.mmd *.md)", ".mmd"),
}
MARGIN = 40.0


def _source_rect(scene: QGraphicsScene, rect: QRectF) -> QRectF:
    rect = rect if not rect.isNull() else scene.itemsBoundingRect()
    return rect.adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN)


def export_png(scene: QGraphicsScene, rect: QRectF, path: Path, scale: float = 1.5) -> Path:
    """Render the canvas area ``rect`` (nodes, wires, groups, notes) to a PNG file."""
    source = _source_rect(scene, rect)
    size = QSize(max(1, int(source.width() * scale)), max(1, int(source.height() * scale)))
    image = QImage(size, QImage.Format.Format_ARGB32)
    image.fill(QColor(35, 35, 38))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    scene.render(painter, QRectF(image.rect()), source, Qt.AspectRatioMode.KeepAspectRatio)
    painter.end()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(path), "PNG"):
        raise OSError(f"{path}: could not write the PNG file")
    return path


def export_canvas_svg(scene: QGraphicsScene, rect: QRectF, path: Path, title: str = "") -> Path:
    """Render the canvas area ``rect`` as an SVG file (vector, through QSvgGenerator)."""
    source = _source_rect(scene, rect)
    path.parent.mkdir(parents=True, exist_ok=True)
    generator = QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(QSize(int(source.width()), int(source.height())))
    generator.setViewBox(QRectF(0, 0, source.width(), source.height()))
    generator.setTitle(title or "ModRAG Studio graph")
    painter = QPainter(generator)
    painter.fillRect(QRectF(0, 0, source.width(), source.height()), QColor(35, 35, 38))
    scene.render(painter, QRectF(0, 0, source.width(), source.height()), source)
    painter.end()
    if not path.is_file():
        raise OSError(f"{path}: could not write the SVG file")
    return path


def export_text(kind: str, doc: GraphDocument, registry: NodeRegistry, path: Path) -> Path:
    """The document renderings that need no canvas: json, dot, graphviz-svg, mermaid (DOT
    and Mermaid draw subgraphs as clusters; the ``-expanded`` kinds put their nodes in place)."""
    if kind == "json":
        save(doc, path)
    elif kind == "json-expanded":
        save(expanded_in_place(doc), path)
    elif kind == "dot-expanded":
        atomic_write_text(path, to_dot(doc, registry, "expand"))
    elif kind == "mermaid-expanded":
        atomic_write_text(path, to_mermaid(doc, registry, "expand"))
    elif kind == "dot":
        atomic_write_text(path, to_dot(doc, registry))
    elif kind == "graphviz-svg":
        atomic_write_text(path, to_svg(doc, registry))
    elif kind == "mermaid":
        atomic_write_text(path, to_mermaid(doc, registry))
    else:
        raise ValueError(f"unknown export kind '{kind}' (one of {', '.join(EXPORT_KINDS)})")
    return path
