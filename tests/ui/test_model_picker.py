"""Model pickers: the properties panel lists the models the configured backend reports."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtGui import QImage, QPainter

from modrag_nodes.llm.nodes import ChatModel
from modrag_studio.engine.edit.editor import ParamRejected
from modrag_studio.ui.panels.properties import PropertiesPanel
from tests.llm.ollama_fixture_server import OllamaFixtureServer
from tests.llm.openai_fixture_server import OpenAIFixtureServer

pytestmark = pytest.mark.ui

#: Generous: the first Ollama listing in a process imports the client (seconds on a busy
#: machine); waitUntil returns as soon as the list is there.
LIST_WAIT_MS = 60_000
DEAD_URL = "http://127.0.0.1:9/v1"  # the discard port: nothing listens on loopback here


def chat_node(window, **params) -> tuple[str, object]:
    editor = window.editor
    node = editor.add_node("llm.model", (0, 0))
    for name, value in params.items():
        editor.set_param(node, name, value)
    window.canvas.select_nodes([node])
    return node, window.properties.pickers["model"]


def wait_listed(qtbot, picker) -> None:
    qtbot.waitUntil(lambda: not picker.loading, timeout=LIST_WAIT_MS)


def test_ollama_models_fill_an_editable_list_and_free_text_is_kept(main_window, qtbot):
    with OllamaFixtureServer(models=["llama-b", "llama-a"]) as server:
        node, picker = chat_node(main_window, backend="ollama", host=server.url)
        wait_listed(qtbot, picker)
        assert sorted(picker.models()) == ["llama-a", "llama-b"]
        assert server.url.rstrip("/") in picker.note.text() and not picker.failed
        assert picker.combo.isEditable()
        picker.combo.setCurrentIndex(picker.models().index("llama-b"))
        picker.combo.activated.emit(picker.combo.currentIndex())
        assert main_window.editor.document().node(node).params["model"] == "llama-b"
        picker.combo.setEditText("not-listed:7b")
        picker.combo.lineEdit().editingFinished.emit()
        assert main_window.editor.document().node(node).params["model"] == "not-listed:7b"


def test_host_change_asks_again_and_a_dead_server_is_named(main_window, qtbot):
    with OpenAIFixtureServer(models=["chat-1"]) as server:
        node, picker = chat_node(main_window, backend="openai", host=server.base_url,
                                 model="chat-1")
        wait_listed(qtbot, picker)
        assert picker.models() == ["chat-1"] and not picker.failed
        main_window.editor.set_param(node, "host", DEAD_URL)
        picker = main_window.properties.pickers["model"]
        qtbot.waitUntil(lambda: picker.failed, timeout=LIST_WAIT_MS)
        assert DEAD_URL in picker.note.text() and picker.models() == []
        assert picker.text() == "chat-1"  # what the user typed or picked stays
        main_window.editor.set_param(node, "host", server.base_url)
        picker = main_window.properties.pickers["model"]
        qtbot.waitUntil(lambda: picker.models() == ["chat-1"], timeout=LIST_WAIT_MS)
        server.models.append("chat-2")
        picker.refresh_button.click()
        qtbot.waitUntil(lambda: picker.models() == ["chat-1", "chat-2"], timeout=LIST_WAIT_MS)
        assert not picker.failed


def test_backend_change_lists_the_embedded_models_off_the_gui_thread(main_window, qtbot,
                                                                     monkeypatch):
    threads: list[str] = []
    listing = ChatModel.param_listing

    def recording(self, params, name, timeout_s=3.0):
        threads.append(threading.current_thread().name)
        return listing(self, params, name, timeout_s)

    monkeypatch.setattr(ChatModel, "param_listing", recording)
    node, picker = chat_node(main_window, backend="ollama", host=DEAD_URL)
    qtbot.waitUntil(lambda: picker.failed, timeout=LIST_WAIT_MS)
    main_window.editor.set_param(node, "backend", "embedded")
    picker = main_window.properties.pickers["model"]
    qtbot.waitUntil(lambda: not picker.loading and not picker.failed, timeout=LIST_WAIT_MS)
    assert "SmolLM2-135M-Instruct" in picker.models()
    assert threads and threading.main_thread().name not in threads


def test_embedding_model_lists_the_server_models(main_window, qtbot):
    with OllamaFixtureServer(models=["embed-x"]) as server:
        editor = main_window.editor
        node = editor.add_node("embed.model", (0, 0))
        editor.set_param(node, "kind", "ollama")
        editor.set_param(node, "host", server.url)
        main_window.canvas.select_nodes([node])
        picker = main_window.properties.pickers["model"]
        wait_listed(qtbot, picker)
        assert picker.models() == ["embed-x"] and not picker.failed


def test_backend_is_a_choice_and_a_typo_is_refused_naming_the_param(main_window):
    node, _picker = chat_node(main_window)
    field = main_window.properties.fields["backend"]
    assert field.kind == "enum"
    options = [field.widget.itemData(i) for i in range(field.widget.count())]
    assert {"embedded", "ollama", "openai"} <= set(options)
    with pytest.raises(ParamRejected) as info:
        main_window.editor.set_param(node, "backend", "olama")
    assert "backend" in str(info.value) and "'olama'" in str(info.value)
    assert main_window.editor.document().node(node).params.get("backend", "embedded") != "olama"


def panel_image(main_window, qtbot, node: str, *, popup: bool) -> QImage:
    """A properties panel showing ``node``, sized for the docs, with the list open or not."""
    panel = PropertiesPanel(main_window.editor)
    qtbot.addWidget(panel)
    panel.resize(440, 470)
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_node(node)
    picker = panel.pickers["model"]
    qtbot.waitUntil(lambda: not picker.loading, timeout=LIST_WAIT_MS)
    note = picker.note  # the layout settles after the note's text changed
    qtbot.waitUntil(lambda: note.height() >= note.heightForWidth(note.width()), timeout=5_000)
    image = panel.grab().toImage()
    if popup:
        picker.combo.showPopup()
        view = picker.combo.view()
        qtbot.waitUntil(lambda: view.isVisible(), timeout=5_000)
        listing = view.window().grab().toImage()
        corner = picker.combo.mapTo(panel, picker.combo.rect().bottomLeft())
        painter = QPainter(image)
        painter.drawImage(corner.x(), corner.y() + 1, listing)
        painter.end()
        picker.combo.hidePopup()
    return image


def test_screenshot_of_the_model_picker(main_window, qtbot, shots):
    """Two panels side by side: Ollama answering with its models, a server that does not."""
    editor = main_window.editor
    with OllamaFixtureServer(models=["llama3.2:3b", "qwen2.5:7b", "nomic-embed-text"]) as server:
        node, _picker = chat_node(main_window, backend="ollama", host=server.url,
                                  model="qwen2.5:7b")
        images = [panel_image(main_window, qtbot, node, popup=True)]
    node = editor.add_node("llm.model", (300, 0))
    editor.set_param(node, "backend", "openai")
    editor.set_param(node, "host", DEAD_URL)
    editor.set_param(node, "model", "my-model")
    images.append(panel_image(main_window, qtbot, node, popup=False))
    width = sum(image.width() for image in images) + 12
    height = max(image.height() for image in images)
    canvas = QImage(width, height, QImage.Format.Format_ARGB32)
    canvas.fill(0xFF202124)
    painter = QPainter(canvas)
    painter.drawImage(0, 0, images[0])
    painter.drawImage(images[0].width() + 12, 0, images[1])
    painter.end()
    assert canvas.save(str(shots / "model-picker.png"))
    assert (shots / "model-picker.png").stat().st_size > 10_000
