"""The properties panel: an editor per param generated from the node's Params JSON schema.

Values are committed through the editor model (undoable). A value the Params model refuses
never reaches the graph: the message is shown under the field and the field keeps the text.
While a variant is active the fields show the values it runs with; the params it overrides
are labelled in purple with a diamond, and their edits go to the variant.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.compose.ports import subgraph_note, type_of
from modrag_studio.engine.core.errors import UnknownNodeType
from modrag_studio.engine.edit.editor import Change, GraphEditor, ParamRejected
from modrag_studio.ui.panels.model_picker import ModelPicker, changed_params, refresh_pickers
from modrag_studio.ui.panels.path_edit import PathEdit
from modrag_studio.ui.panels.variant_overlay import VARIANT_COLOUR, VariantOverlay

_BIG = 1_000_000_000


def resolve(schema: dict[str, Any], prop: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The effective property schema (``$ref`` followed) and whether ``null`` is allowed."""
    nullable = False
    if "anyOf" in prop:
        members = [m for m in prop["anyOf"] if m.get("type") != "null"]
        nullable = len(members) < len(prop["anyOf"])
        if len(members) == 1:
            prop = {**prop, **members[0]}
            prop.pop("anyOf", None)
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        prop = {**schema.get("$defs", {}).get(name, {}), **{k: v for k, v in prop.items()
                                                            if k != "$ref"}}
    return prop, nullable


class CommittingTextEdit(QPlainTextEdit):
    """A text box that commits when it loses focus."""

    def __init__(self, on_commit: Callable[[], None]) -> None:
        super().__init__()
        self._on_commit = on_commit
        self.setTabChangesFocus(True)
        self.setFixedHeight(80)

    def focusOutEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().focusOutEvent(event)
        self._on_commit()


class ParamField:
    """One param: its widget, the value it shows, and the inline error label."""

    def __init__(self, name: str, prop: dict[str, Any], nullable: bool,
                 commit: Callable[[ParamField], None], *, picker: bool = False,
                 base_dir: Callable[[], Path | None] = lambda: None) -> None:
        self.name = name
        self.picker = picker
        self.base_dir = base_dir
        self.prop = prop
        self.nullable = nullable
        self.error = QLabel("")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #ff7a6a;")
        self.error.hide()
        self._commit = lambda *_a: commit(self)
        self.kind, self.widget = self._build()
        self.widget.setToolTip(prop.get("description", ""))

    def _build(self) -> tuple[str, QWidget]:
        prop = self.prop
        tp = prop.get("type")
        if self.picker and tp == "string":
            picker = ModelPicker()
            picker.committed.connect(self._commit)
            return "pick", picker
        if prop.get("x-path") and tp == "string":  # a declared path param: text + Browse…
            path = PathEdit(prop["x-path"], self.base_dir)
            if self.nullable:
                path.setPlaceholderText("(none)")
            path.editingFinished.connect(self._commit)
            return "str", path
        if "enum" in prop or "const" in prop:
            box = QComboBox()
            options = prop.get("enum") or [prop.get("const")]
            if self.nullable:
                options = [None, *options]
            for option in options:
                box.addItem("(none)" if option is None else str(option), option)
            box.activated.connect(self._commit)
            return "enum", box
        if tp == "boolean" and not self.nullable:
            check = QCheckBox()
            check.toggled.connect(self._commit)
            return "bool", check
        if tp == "integer" and not self.nullable:
            spin = QSpinBox()
            spin.setRange(int(prop.get("minimum", -_BIG)), int(prop.get("maximum", _BIG)))
            spin.setKeyboardTracking(False)
            spin.editingFinished.connect(self._commit)
            return "int", spin
        if tp == "number" and not self.nullable:
            spin = QDoubleSpinBox()
            spin.setDecimals(4)
            low = prop.get("minimum", prop.get("exclusiveMinimum", -_BIG))
            high = prop.get("maximum", prop.get("exclusiveMaximum", _BIG))
            spin.setRange(float(low), float(high))
            spin.setSingleStep(0.1 if high - low <= 10 else 1.0)
            spin.setKeyboardTracking(False)
            spin.editingFinished.connect(self._commit)
            return "float", spin
        if tp == "string" and not prop.get("multiline"):
            line = QLineEdit()
            if self.nullable:
                line.setPlaceholderText("(none)")
            line.editingFinished.connect(self._commit)
            return "str", line
        if tp == "string":
            return "text", CommittingTextEdit(self._commit)
        if tp == "array" and prop.get("items", {}).get("type") == "string":
            box = CommittingTextEdit(self._commit)
            box.setPlaceholderText("one item per line")
            return "lines", box
        if tp in ("integer", "number", "boolean"):
            line = QLineEdit()
            line.setPlaceholderText("(none)")
            line.editingFinished.connect(self._commit)
            return "json-scalar", line
        box = CommittingTextEdit(self._commit)
        box.setPlaceholderText("JSON")
        return "json", box

    def set_value(self, value: Any) -> None:
        widget = self.widget
        widget.blockSignals(True)
        try:
            if self.kind == "enum":
                index = widget.findData(value)
                widget.setCurrentIndex(max(index, 0))
            elif self.kind == "bool":
                widget.setChecked(bool(value))
            elif self.kind == "int":
                widget.setValue(int(value or 0))
            elif self.kind == "float":
                widget.setValue(float(value or 0.0))
            elif self.kind == "str":
                widget.setText("" if value is None else str(value))
            elif self.kind == "pick":
                widget.set_text("" if value is None else str(value))
            elif self.kind == "text":
                widget.setPlainText("" if value is None else str(value))
            elif self.kind == "lines":
                widget.setPlainText("\n".join(str(v) for v in value or []))
            elif self.kind == "json-scalar":
                widget.setText("" if value is None else json.dumps(value))
            else:
                widget.setPlainText("" if value is None else json.dumps(value, indent=2))
        finally:
            widget.blockSignals(False)
        self._shown = value

    def value(self) -> Any:
        """The widget's value as JSON data; raises ValueError for text that does not parse."""
        widget = self.widget
        if self.kind == "enum":
            return widget.currentData()
        if self.kind == "bool":
            return widget.isChecked()
        if self.kind in ("int", "float"):
            return widget.value()
        if self.kind == "pick":
            return widget.text()
        if self.kind == "str":
            text = widget.text()
            return None if self.nullable and text == "" else text
        if self.kind == "text":
            text = widget.toPlainText()
            return None if self.nullable and text == "" else text
        if self.kind == "lines":
            return [line for line in widget.toPlainText().splitlines() if line.strip()]
        text = widget.text() if self.kind == "json-scalar" else widget.toPlainText()
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON: {exc.msg} (line {exc.lineno})") from None

    def show_error(self, message: str) -> None:
        self.error.setStyleSheet("color: #ff7a6a;")
        self.error.setText(message)
        self.error.setVisible(bool(message))
        self.missing = False

    def show_missing(self, message: str) -> None:
        """A required value is empty (shown unless an error is already shown)."""
        if self.error.isVisible() and not getattr(self, "missing", False):
            return
        self.error.setStyleSheet("color: #f0b050;")
        self.error.setText(message)
        self.error.setVisible(bool(message))
        self.missing = bool(message)


def missing_values(node_type: Any, spec: Any, doc: Any) -> dict[str, str]:
    """Param name -> why it must be filled in, for params that are required and empty.

    Required means: required by the Params schema, a ``minLength`` of 1 or more, or a text
    param named like one of the node's inputs (the input overrides it, e.g. a loader's
    ``path``) while that input is not wired.
    """
    schema = node_type.Params.model_json_schema()
    required = set(schema.get("required", []))
    wired = {e.target_port for e in doc.edges if e.target_node == spec.id}
    inputs = {p.name for p in node_type.inputs}
    found = {}
    for name, raw in schema.get("properties", {}).items():
        prop, _nullable = resolve(schema, raw)
        value = spec.params.get(name, prop.get("default"))
        empty = value is None or (isinstance(value, str | list | dict) and not value)
        if not empty:
            continue
        if name in required or prop.get("minLength", 0) >= 1:
            found[name] = "required: fill in a value"
        elif name in inputs and name not in wired and prop.get("type") == "string":
            found[name] = f"required: fill in a value or wire the '{name}' input"
    return found


class PropertiesPanel(QWidget):
    """Shows the selected node: id, type, title and one editor per param."""

    def __init__(self, editor: GraphEditor, parent: QWidget | None = None, *,
                 variant: VariantOverlay | None = None) -> None:
        super().__init__(parent)
        self.editor = editor
        self.variant = variant or VariantOverlay()
        self.variant.listeners.append(self._load_values)
        self.node_id: str | None = None
        self.fields: dict[str, ParamField] = {}
        self.labels: dict[str, QLabel] = {}
        self.pickers: dict[str, ModelPicker] = {}
        self.on_message: list[Callable[[str], None]] = []
        self.header = QLabel("Select a node to see its parameters.")
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.title_edit = QLineEdit()
        self.title_edit.setPlaceholderText("title (optional)")
        self.title_edit.editingFinished.connect(self._commit_title)
        self.form_host = QWidget()
        self.form = QFormLayout(self.form_host)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.form_host)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.header)
        layout.addWidget(self.title_edit)
        layout.addWidget(scroll, 1)
        self.title_edit.hide()
        editor.subscribe(self._on_change)

    def detach(self) -> None:
        """Stop following the editor (a panel in a dialog that closes)."""
        self.editor.unsubscribe(self._on_change)
        if self._load_values in self.variant.listeners:
            self.variant.listeners.remove(self._load_values)

    def show_node(self, node_id: str | None) -> None:
        """Build the editors for ``node_id`` (None clears the panel)."""
        self.node_id = node_id
        self.fields.clear()
        self.labels.clear()
        self.pickers.clear()
        while self.form.rowCount():
            self.form.removeRow(0)
        doc = self.editor.document()
        if node_id is None or node_id not in doc.node_ids():
            self.node_id = None
            self.header.setText("Select a node to see its parameters.")
            self.title_edit.hide()
            return
        spec = doc.node(node_id)
        try:
            node_type = type_of(spec, self.editor.registry)
        except UnknownNodeType as exc:
            self.header.setText(f"<b>{node_id}</b><br/>{exc}")
            self.title_edit.hide()
            return
        desc, note = (node_type.description or "").rstrip(), subgraph_note(spec)
        if desc and note and not desc.endswith((".", "!", "?", ":")):
            desc += "."  # "... runs in its place. Holds 3 nodes"
        self.header.setText(f"<b>{node_type.display_title()}</b> &nbsp;<code>{node_id}</code>"
                            f"<br/><small>{node_type.type_id} v{node_type.version} · "
                            f"{node_type.category}</small><br/>{desc}{note}")
        self.title_edit.show()
        self.title_edit.setText(spec.title or "")
        schema = node_type.Params.model_json_schema()
        choice_sources = node_type.choice_sources
        for name, raw in schema.get("properties", {}).items():
            prop, nullable = resolve(schema, raw)
            field = ParamField(name, prop, nullable, self._commit, picker=name in choice_sources,
                               base_dir=self._graph_folder)
            self.fields[name] = field
            if field.kind == "pick":
                self.pickers[name] = field.widget
            host = QWidget()
            box = QVBoxLayout(host)
            box.setContentsMargins(0, 0, 0, 0)
            box.addWidget(field.widget)
            box.addWidget(field.error)
            label = QLabel(prop.get("title", name))
            label.setToolTip(prop.get("description", ""))
            self.labels[name] = label
            self.form.addRow(label, host)
        self._load_values()
        refresh_pickers(self.pickers, node_type, spec.params)

    def _graph_folder(self) -> Path | None:
        return self.editor.path.parent if self.editor.path else None

    def _load_values(self) -> None:
        if self.node_id is None:
            return
        spec = self.editor.document().node(self.node_id)
        node_type = type_of(spec, self.editor.registry)
        try:
            defaults = node_type.Params.model_validate(spec.params).model_dump(mode="json")
        except Exception:  # invalid saved params: show what is stored, defaults elsewhere
            defaults = {}
            for name, info in node_type.Params.model_fields.items():
                if not info.is_required():
                    defaults[name] = info.get_default(call_default_factory=True)
        for name, field in self.fields.items():
            base = spec.params.get(name, defaults.get(name))
            field.set_value(self.variant.value(self.node_id, name, base))
            field.show_error("")
            self._mark_variant(name, self.variant.note(self.node_id, name, base))
        self._flag_missing()

    def _mark_variant(self, name: str, note: str) -> None:
        """Label ``name`` as the active variant's value (``note``) or as the base's."""
        label = self.labels.get(name)
        if label is None:
            return
        title = label.text().removesuffix(" ◆")
        label.setText(f"{title} ◆" if note else title)
        label.setStyleSheet(f"color: {VARIANT_COLOUR}; font-weight: bold;" if note else "")
        self.fields[name].widget.setToolTip(note or self.fields[name].prop.get(
            "description", ""))

    def _flag_missing(self) -> None:
        """Mark required params that are empty right away (not only when the graph runs)."""
        if self.node_id is None:
            return
        doc = self.editor.document()
        spec = doc.node(self.node_id)
        missing = missing_values(type_of(spec, self.editor.registry), spec, doc)
        for name, field in self.fields.items():
            field.show_missing(missing.get(name, ""))

    def _commit(self, field: ParamField) -> None:
        if self.node_id is None:
            return
        try:
            value = field.value()
        except ValueError as exc:
            field.show_error(str(exc))
            return
        if self.variant.overrides(self.node_id, field.name) and self.variant.set_param:
            self._commit_to_variant(field, value)
            return
        spec = self.editor.document().node(self.node_id)
        if field.name in spec.params and spec.params[field.name] == value:
            field.show_error("")
            return
        if field.name not in spec.params and getattr(field, "_shown", object()) == value:
            field.show_error("")  # back to the value shown: nothing is wrong any more
            return
        try:
            self.editor.set_param(self.node_id, field.name, value)
        except ParamRejected as exc:
            field.show_error(exc.message)
            for callback in list(self.on_message):
                callback(str(exc))
            return
        field.show_error("")

    def _commit_to_variant(self, field: ParamField, value: Any) -> None:
        assert self.node_id is not None and self.variant.set_param is not None
        if getattr(field, "_shown", object()) == value:
            field.show_error("")
            return
        try:
            self.variant.set_param(self.node_id, field.name, value)
        except ParamRejected as exc:
            field.show_error(exc.message)
            return
        field.show_error("")

    def _commit_title(self) -> None:
        if self.node_id is None:
            return
        title = self.title_edit.text().strip() or None
        if title != self.editor.document().node(self.node_id).title:
            self.editor.set_title(self.node_id, title)

    def _on_change(self, change: Change) -> None:
        if self.node_id is None:
            return
        if self.node_id not in change.new.node_ids():
            self.show_node(None)
            return
        old_ids = change.old.node_ids()
        if self.node_id not in old_ids or change.kind == "reset":
            self.show_node(self.node_id)
            return
        if change.old.node(self.node_id) != change.new.node(self.node_id):
            self.title_edit.setText(change.new.node(self.node_id).title or "")
            self._load_values()
            new = change.new.node(self.node_id)
            refresh_pickers(self.pickers, type_of(new, self.editor.registry), new.params,
                            changed_params(change.old.node(self.node_id).params, new.params))
        elif change.old.edges != change.new.edges:
            self._flag_missing()
