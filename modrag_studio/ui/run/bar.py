"""The run bar: one field per graph input; the last values are remembered per graph."""

from __future__ import annotations

import json

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QWidget

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.graph_io import GraphPort, graph_interface
from modrag_studio.engine.core.registry import NodeRegistry

SETTINGS_ORG, SETTINGS_APP = "ModRAG", "ModRAG Studio"


def input_specs(doc: GraphDocument, registry: NodeRegistry | None = None) -> list[GraphPort]:
    """The graph's inputs in document order (one per name), from ``engine.graph_io``."""
    seen: set[str] = set()
    specs = []
    for port in graph_interface(doc, registry or default_registry()).inputs:
        if port.name not in seen:
            seen.add(port.name)
            specs.append(port)
    return specs


class RunBar(QWidget):
    """Input fields for a graph. ``values()`` gives what to pass to the run."""

    submitted = Signal()  # Return pressed in a one-line field

    def __init__(self, parent: QWidget | None = None, settings: QSettings | None = None,
                 registry: NodeRegistry | None = None) -> None:
        super().__init__(parent)
        self.settings = settings or QSettings(SETTINGS_ORG, SETTINGS_APP)
        self.registry = registry
        self.graph_key = ""
        self.fields: dict[str, QLineEdit | QPlainTextEdit] = {}
        self._specs: list[GraphPort] = []
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(4, 0, 4, 0)
        self._layout.setSpacing(6)
        self._empty = QLabel("This graph takes no inputs.")
        self._empty.setEnabled(False)
        self._layout.addWidget(self._empty)

    def set_document(self, doc: GraphDocument, graph_key: str, *, keep: bool = True) -> None:
        """Show fields for ``doc``'s inputs.

        Typed values stay while the document is the same graph (``keep``): through a Save As
        (a new ``graph_key``) and through renaming an input (values follow the input's node).
        ``keep=False`` is for another graph: fields show that graph's remembered values.
        """
        specs = input_specs(doc, self.registry)
        if keep and specs == self._specs and graph_key == self.graph_key:
            return
        typed_by_node, typed_by_name = (self._typed() if keep else ({}, {}))
        self.graph_key = graph_key
        self._specs = specs
        remembered = self.remembered()
        old = [*self.fields.values(), *self.findChildren(QLabel, "inputLabel")]
        for widget in old:  # hide at once: deleteLater only happens on the next event loop
            self._layout.removeWidget(widget)
            widget.hide()
            widget.setObjectName("")
            widget.deleteLater()
        self.fields = {}
        self._empty.setVisible(not specs)
        for spec in specs:
            name = spec.name
            label = QLabel(f"{name}:", self)
            label.setObjectName("inputLabel")
            label.setToolTip(spec.description)
            widget: QLineEdit | QPlainTextEdit
            if spec.multiline:
                widget = QPlainTextEdit(self)
                widget.setFixedHeight(48)
                widget.setTabChangesFocus(True)
            else:
                widget = QLineEdit(self)
                widget.returnPressed.connect(self.submitted)
                widget.setClearButtonEnabled(True)
            widget.setObjectName(f"runInput_{name}")
            widget.setMinimumWidth(260)
            hint = spec.description or name
            if spec.default is not None:
                hint += f" (default: {spec.default})"
            widget.setPlaceholderText(hint)
            widget.setToolTip(spec.description)
            value = typed_by_node.get(spec.node_id) or typed_by_name.get(name) \
                or remembered.get(name)
            if value:
                _set_text(widget, str(value))
            self._layout.addWidget(label)
            self._layout.addWidget(widget, 1)
            label.show()
            widget.show()
            self.fields[name] = widget

    def _typed(self) -> tuple[dict[str, str], dict[str, str]]:
        """The typed values by input node id and by input name."""
        by_name = self.values()
        by_node = {s.node_id: by_name[s.name] for s in self._specs if s.name in by_name}
        return by_node, by_name

    def values(self, include_empty: bool = False) -> dict[str, str]:
        """Typed values by input name (empty fields left out so their defaults apply)."""
        out = {}
        for name, widget in self.fields.items():
            text = _text(widget)
            if text or include_empty:
                out[name] = text
        return out

    def set_values(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            if name in self.fields:
                _set_text(self.fields[name], value)

    # memory --------------------------------------------------------------------
    def _settings_key(self) -> str:
        return "run_inputs/" + self.graph_key.replace("/", "|")

    def remembered(self) -> dict[str, str]:
        if not self.graph_key:
            return {}
        raw = self.settings.value(self._settings_key(), "")
        try:
            data = json.loads(raw) if raw else {}
        except (TypeError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def remember(self) -> None:
        """Store the current values for this graph (called when a run starts)."""
        if self.graph_key:
            self.settings.setValue(self._settings_key(), json.dumps(self.values()))
            self.settings.sync()


def _text(widget: QLineEdit | QPlainTextEdit) -> str:
    return widget.toPlainText() if isinstance(widget, QPlainTextEdit) else widget.text()


def _set_text(widget: QLineEdit | QPlainTextEdit, text: str) -> None:
    if isinstance(widget, QPlainTextEdit):
        widget.setPlainText(text)
    else:
        widget.setText(text)
