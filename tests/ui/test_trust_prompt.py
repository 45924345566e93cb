"""The studio asks before the first run of a graph received from elsewhere."""

import pytest

from modrag_studio.engine.document import save
from modrag_studio.engine.trust import is_trusted
from tests.engine.test_trust import evil_graph

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
    prompt = main_window.trust_prompt
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
    controller = main_window.run_features.controller
    assert controller.run(main_window.editor.document()) is False
    assert not controller.busy
    assert any(str(secret) in line for line in asked[0])
    assert any("attacker.example" in line for line in asked[0])
    assert not is_trusted(path)
    # saved by the user: their own from now on, no question
    assert main_window.save_to(path)
    assert is_trusted(path)
    assert prompt.allowed(main_window.editor.document())
    assert len(asked) == 1
