"""The run bar: one field per graph input; the last values are remembered per graph."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QWidget

from modrag_studio.engine.document import GraphDocument

INPUT_TYPE = "graph.input"
SETTINGS_ORG, SETTINGS_APP = "ModRAG", "ModRAG Studio"


def input_specs(doc: GraphDocument) -> list[dict[str, Any]]:
    """The graph's inputs in document order: name, description, default, multiline."""
    specs, seen = [], set()
    for node in doc.nodes:
        if node.type != INPUT_TYPE:
            continue
        name = str(node.params.get("name", "query"))
        if name in seen:
            continue
        seen.add(name)
        specs.append({"name": name, "description": str(node.params.get("description") or ""),
                      "default": node.params.get("default"),
                      "multiline": bool(node.params.get("multiline", False))})
    return specs


class RunBar(QWidget):
    """Input fields for a graph. ``values()`` gives what to pass to the run."""

    submitted = Signal()  # Return pressed in a one-line field

    def __init__(self, parent: QWidget | None = None, settings: QSettings | None = None) -> None:
        super().__init__(parent)
        self.settings = settings or QSettings(SETTINGS_ORG, SETTINGS_APP)
        self.graph_key = ""
        self.fields: dict[str, QLineEdit | QPlainTextEdit] = {}
        self._specs: list[dict[str, Any]] = []
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(4, 0, 4, 0)
        self._layout.setSpacing(6)
        self._empty = QLabel("This graph takes no inputs.")
        self._empty.setEnabled(False)
        self._layout.addWidget(self._empty)

    def set_document(self, doc: GraphDocument, graph_key: str) -> None:
        """Show fields for ``doc``'s inputs, keeping typed values when the set is unchanged."""
        specs = input_specs(doc)
        if specs == self._specs and graph_key == self.graph_key:
            return
        keep = self.values(include_empty=True) if graph_key == self.graph_key else {}
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
            name = spec["name"]
            label = QLabel(f"{name}:", self)
            label.setObjectName("inputLabel")
            label.setToolTip(spec["description"])
            widget: QLineEdit | QPlainTextEdit
            if spec["multiline"]:
                widget = QPlainTextEdit(self)
                widget.setFixedHeight(48)
                widget.setTabChangesFocus(True)
            else:
                widget = QLineEdit(self)
                widget.returnPressed.connect(self.submitted)
                widget.setClearButtonEnabled(True)
            widget.setObjectName(f"runInput_{name}")
            widget.setMinimumWidth(260)
            hint = spec["description"] or name
            if spec["default"] is not None:
                hint += f" (default: {spec['default']})"
            widget.setPlaceholderText(hint)
            widget.setToolTip(spec["description"])
            value = keep.get(name, remembered.get(name))
            if value:
                _set_text(widget, str(value))
            self._layout.addWidget(label)
            self._layout.addWidget(widget, 1)
            label.show()
            widget.show()
            self.fields[name] = widget

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
