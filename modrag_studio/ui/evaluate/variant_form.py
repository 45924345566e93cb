"""The form that makes or edits a variant: a name and a list of param changes.

Each change is a row: the node (a drop-down of the graph's nodes), the param (a drop-down of
that node's params) and the value in the param's own editor (a spin box, a check box, a
drop-down for a choice, a text box for a long text), pre-filled with what the node has now.
OK checks every value against the node's Params model: a bad one is named under its row
(``fusion · top_k: ...``), the dialog stays open and keeps what was typed. Type swaps,
re-wired inputs and bypasses a variant already has (from a grid cell) are kept as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.compose.ports import type_of
from modrag_studio.engine.core.document import _ID_PATTERN, GraphDocument, VariantSpec
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.layout.titles import graph_titles
from modrag_studio.ui.panels.properties import ParamField, resolve

LONG_TEXT = 60  # a text param longer than this (or on several lines) gets a text box
_ERROR_STYLE = "color: #ff7a6a;"


def _no_commit(_field: ParamField) -> None:
    """The form commits on OK, not field by field."""


class ChangeRow(QWidget):
    """One change: node, param and a value editor of the param's type."""

    def __init__(self, doc: GraphDocument, registry: NodeRegistry,
                 on_remove: Callable[[ChangeRow], None]) -> None:
        super().__init__()
        self.doc, self.registry = doc, registry
        self.node = QComboBox()
        self.node.setObjectName("variant_node")
        titles = graph_titles(doc, self._type)  # as the canvas draws them
        for spec in doc.nodes:
            if self._params_of(spec.id):
                self.node.addItem(f"{titles.get(spec.id, spec.id)}  ({spec.id})", spec.id)
        self.param = QComboBox()
        self.param.setObjectName("variant_param")
        self.field: ParamField | None = None
        self.value_host = QVBoxLayout()
        self.value_host.setContentsMargins(0, 0, 0, 0)
        self.error = QLabel("")
        self.error.setStyleSheet(_ERROR_STYLE)
        self.error.setWordWrap(True)
        self.error.hide()
        remove = QPushButton("Remove")
        remove.setToolTip("Leave this param as the base graph has it")
        remove.clicked.connect(lambda: on_remove(self))
        top = QHBoxLayout()
        top.addWidget(QLabel("Node"))
        top.addWidget(self.node, 2)
        top.addWidget(QLabel("Param"))
        top.addWidget(self.param, 1)
        top.addWidget(remove)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.addLayout(top)
        layout.addLayout(self.value_host)
        layout.addWidget(self.error)
        self.node.currentIndexChanged.connect(self._node_chosen)
        self.param.currentIndexChanged.connect(self._param_chosen)
        self.values: dict[tuple[str, str], Any] = {}  # what each node.param has now

    def _type(self, node_id: str) -> type[NodeType] | None:
        try:
            return type_of(self.doc.node(node_id), self.registry)
        except (KeyError, ModragError):
            return None

    def _params_of(self, node_id: str) -> dict[str, Any]:
        node_type = self._type(node_id)
        if node_type is None:
            return {}
        return node_type.Params.model_json_schema().get("properties", {})

    def choose(self, node_id: str, param: str | None = None, value: Any = None) -> None:
        """Show ``node_id.param`` (the node's first param when None), with ``value``."""
        self.node.setCurrentIndex(max(self.node.findData(node_id), 0))
        self._node_chosen()
        if param is not None:
            self.param.setCurrentIndex(max(self.param.findData(param), 0))
            self._param_chosen()
        if value is not None and self.field is not None:
            self.field.set_value(value)

    def node_id(self) -> str:
        return self.node.currentData() or ""

    def param_name(self) -> str:
        return self.param.currentData() or ""

    def _node_chosen(self, *_args: Any) -> None:
        self.param.blockSignals(True)
        self.param.clear()
        schema = self._params_of(self.node_id())
        for name, raw in schema.items():
            self.param.addItem(raw.get("title", name) if "title" in raw else name, name)
        node_type = self._type(self.node_id())
        key = next(iter(node_type.key_params), None) if node_type is not None else None
        self.param.setCurrentIndex(max(self.param.findData(key), 0))  # the one shown on it
        self.param.blockSignals(False)
        self._param_chosen()

    def current_value(self, node_id: str, param: str) -> Any:
        """What ``node_id.param`` is now: the node's own value, else its default."""
        if (node_id, param) in self.values:
            return self.values[node_id, param]
        spec = self.doc.node(node_id)
        node_type = self._type(node_id)
        if param in spec.params or node_type is None:
            return spec.params.get(param)
        info = node_type.Params.model_fields.get(param)
        if info is None or info.is_required():
            return None
        return info.get_default(call_default_factory=True)

    def _param_chosen(self, *_args: Any) -> None:
        if self.field is not None:
            self.value_host.removeWidget(self.field.widget)
            self.field.widget.deleteLater()
            self.field = None
        self.show_error("")
        node_id, name = self.node_id(), self.param_name()
        node_type = self._type(node_id)
        if not name or node_type is None:
            return
        schema = node_type.Params.model_json_schema()
        prop, nullable = resolve(schema, schema["properties"][name])
        value = self.current_value(node_id, name)
        if isinstance(value, str) and (len(value) > LONG_TEXT or "\n" in value):
            prop = {**prop, "multiline": True}  # a long text gets room, never one line
        self.field = ParamField(name, prop, nullable, _no_commit)
        self.field.widget.setObjectName("variant_value")
        self.field.set_value(value)
        self.value_host.addWidget(self.field.widget)

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(bool(message))

    def checked_value(self) -> Any:
        """The typed value, checked by the node's Params; raises ValueError naming the field."""
        node_id, name = self.node_id(), self.param_name()
        where = f"{node_id} · {name}"
        if self.field is None or not name:
            raise ValueError(f"{where or 'change'}: choose a node and a param")
        if isinstance(self.field.widget, QAbstractSpinBox):
            self.field.widget.interpretText()  # OK pressed while the number is being typed
        try:
            value = self.field.value()
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        node_type = self._type(node_id)
        params = {**self.doc.node(node_id).params, name: value}
        try:
            model = node_type.Params.model_validate(params)  # type: ignore[union-attr]
        except ValidationError as exc:
            errors = exc.errors()
            mine = [e for e in errors if e["loc"] and e["loc"][0] == name] or errors
            raise ValueError(f"{where}: {mine[0]['msg']}") from None
        return model.model_dump(mode="json").get(name, value)


class VariantForm(QDialog):
    """New Variant / Edit Variant: a name and param changes; ``store`` saves the result.

    ``store(spec)`` raises ModragError (shown in the dialog, which stays open) when the
    variant cannot be applied to the graph.
    """

    def __init__(self, doc: GraphDocument, registry: NodeRegistry,
                 store: Callable[[VariantSpec], None], *, existing: VariantSpec | None = None,
                 node_id: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc, self.registry, self.store = doc, registry, store
        self.existing = existing
        self.setWindowTitle(f"Edit Variant {existing.name}" if existing else "New Variant")
        self.resize(640, 360)
        self.name = QLineEdit(existing.name if existing else self._free_name())
        self.name.setObjectName("variant_name")
        self.name.setReadOnly(existing is not None)
        self.name_error = QLabel("")
        self.name_error.setStyleSheet(_ERROR_STYLE)
        self.name_error.hide()
        self.description = QLineEdit(existing.description if existing else "")
        self.description.setPlaceholderText("what this variant tries (optional)")
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("", self.name_error)
        form.addRow("Description", self.description)
        rows_host = QWidget()
        self.rows_box = QVBoxLayout(rows_host)
        self.rows_box.setContentsMargins(0, 0, 0, 0)
        self.rows_box.addStretch(1)
        rows_area = QScrollArea()  # many changes scroll; none is squeezed
        rows_area.setWidgetResizable(True)
        rows_area.setFrameShape(QScrollArea.Shape.NoFrame)
        rows_area.setWidget(rows_host)
        self.rows: list[ChangeRow] = []
        add = QPushButton("Add change")
        add.setObjectName("variant_add_change")
        add.clicked.connect(lambda: self.add_row())
        kept = _kept_changes(existing)
        self.kept = QLabel(f"Also kept from this variant: {kept}" if kept else "")
        self.kept.setWordWrap(True)
        self.kept.setVisible(bool(kept))
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.try_accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(QLabel("<b>Changes</b> (each param as this variant runs it)"))
        layout.addWidget(rows_area, 1)
        layout.addWidget(add)
        layout.addWidget(self.kept)
        layout.addWidget(self.buttons)
        if existing is not None and existing.params:
            for changed_node, params in existing.params.items():
                for param, value in params.items():
                    self.add_row(changed_node, param, value)
        else:
            self.add_row(node_id)

    def _free_name(self) -> str:
        taken = {v.name for v in self.doc.variants or []}
        return next(f"variant_{i}" for i in range(1, len(taken) + 2)
                    if f"variant_{i}" not in taken)

    def add_row(self, node_id: str | None = None, param: str | None = None,
                value: Any = None) -> ChangeRow:
        row = ChangeRow(self.doc, self.registry, self._remove_row)
        if node_id is not None and node_id in self.doc.node_ids():
            if param is not None:
                row.values[node_id, param] = value
            row.choose(node_id, param)
        elif row.node.count():
            row.choose(row.node.currentData())
        self.rows.append(row)
        self.rows_box.insertWidget(self.rows_box.count() - 1, row)  # above the stretch
        return row

    def _remove_row(self, row: ChangeRow) -> None:
        self.rows.remove(row)
        self.rows_box.removeWidget(row)
        row.deleteLater()

    def spec(self) -> VariantSpec | None:
        """The variant the form describes; None (errors shown, input kept) when it is not."""
        ok = True
        name = self.name.text().strip()
        message = ""
        if not re.match(_ID_PATTERN, name):
            message = "Name: letters, digits, '_' or '-', not starting with a digit"
        elif self.existing is None and name in {v.name for v in self.doc.variants or []}:
            message = f"Name: a variant '{name}' exists already"
        self.name_error.setText(message)
        self.name_error.setVisible(bool(message))
        ok = not message
        params: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            try:
                value = row.checked_value()
            except ValueError as exc:
                row.show_error(str(exc))
                ok = False
                continue
            row.show_error("")
            params.setdefault(row.node_id(), {})[row.param_name()] = value
        if not ok:
            return None
        kept = self.existing or VariantSpec(name=name)
        return kept.model_copy(update={"name": name, "params": params,
                                       "description": self.description.text().strip()})

    def try_accept(self) -> None:
        spec = self.spec()
        if spec is None:
            return
        try:
            self.store(spec)
        except ModragError as exc:
            self.name_error.setText(str(exc))
            self.name_error.show()
            return
        self.accept()


def _kept_changes(variant: VariantSpec | None) -> str:
    if variant is None:
        return ""
    parts = [f"{n} becomes {t}" for n, t in variant.swap.items()]
    parts += [f"{r.target} fed from {r.source}" for r in variant.rewire]
    parts += [f"{n} {'off' if off else 'on'}" for n, off in variant.bypass.items()]
    return "; ".join(parts)
