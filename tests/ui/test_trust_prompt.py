"""The studio asks before the first run of a graph received from elsewhere."""

import pytest

from modrag_studio.engine.core.document import save
from modrag_studio.engine.trust.reach import is_trusted
from tests.engine.test_trust import evil_graph, key_graph

pytestmark = pytest.mark.ui


def test_a_received_graph_asks_first_and_a_saved_one_does_not(main_window, qtbot, tmp_path,
                                                              monkeypatch):
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("MODRAG_APPROVED_HOSTS", raising=False)
    secret = tmp_path / "private" / "notes.txt"
    secret.parent.mkdir()
    secret.write_text("PRIVATE")
    path = tmp_path / "downloads" / "received.json"
    save(evil_graph(str(secret)), path)
    assert main_window.open_path(path, offer_restore=False)
    prompt = main_window.features.trust_prompt
    asked = []

    def refuse(graph_path, found):
        asked.append(found.lines())
        box = prompt.message_box(graph_path, found)
        box.show()
        qtbot.waitExposed(box)
        box.grab().save("/tmp/i19_trust_prompt.png")
        box.close()
        return False

    monkeypatch.setattr(prompt, "ask", refuse)
    controller = main_window.features.run.controller
    assert controller.run(main_window.editor.document()) is False
    assert not controller.busy
    assert any(str(secret) in line for line in asked[0])
    assert any("attacker.example" in line for line in asked[0])
    assert not any("environment variable" in line for line in asked[0])  # Ollama reads no key
    assert not is_trusted(path)
    # saved by the user: their own from now on, no question
    assert main_window.save_to(path)
    assert is_trusted(path)
    assert prompt.allowed(main_window.editor.document())
    assert len(asked) == 1


def test_the_prompt_names_the_environment_variable_a_graph_reads(main_window, qtbot, tmp_path,
                                                                 monkeypatch):
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    path = tmp_path / "downloads" / "keyed.json"
    save(key_graph(backend="openai", host="http://127.0.0.1:8080/v1", model="m",
                   api_key_env="MY_TEAM_KEY"), path)
    assert main_window.open_path(path, offer_restore=False)
    prompt = main_window.features.trust_prompt
    shown = []

    def refuse(graph_path, found):
        box = prompt.message_box(graph_path, found)
        shown.append(box.informativeText())
        box.close()
        return False

    monkeypatch.setattr(prompt, "ask", refuse)
    assert main_window.features.run.controller.run(main_window.editor.document()) is False
    assert "reads environment variable MY_TEAM_KEY  (llm.api_key_env)" in shown[0]


def test_the_prompt_shows_escape_sequences_and_markup_as_text(main_window, tmp_path,
                                                              monkeypatch):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QLabel

    from tests.engine.test_trust_display import ERASE, RLO, faking_graph

    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    path = tmp_path / "downloads" / "<b>fake<i>.json"
    save(faking_graph(str(secret)), path)
    assert main_window.open_path(path, offer_restore=False)
    prompt = main_window.features.trust_prompt
    boxes = []

    def refuse(graph_path, found):
        boxes.append(prompt.message_box(graph_path, found))
        return False

    monkeypatch.setattr(prompt, "ask", refuse)
    assert main_window.features.run.controller.run(main_window.editor.document()) is False
    box = boxes[0]
    shown = box.informativeText()
    assert f"reads {secret}  (prompt.template_file)" in shown
    assert "\x1b" not in shown and RLO not in shown and "\\x1b[1A" in shown
    assert ERASE not in shown
    labels = [label for label in box.findChildren(QLabel)
              if "<b>fake<i>.json" in label.text() or "reads" in label.text()]
    assert len(labels) == 2  # the name and the list, shown as text, never as markup
    assert all(label.textFormat() == Qt.TextFormat.PlainText for label in labels)
    box.close()
