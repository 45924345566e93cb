"""Opening a new Chroma folder that another process is creating at the same moment."""

from __future__ import annotations

import chromadb
import pytest
from chromadb.api.shared_system_client import SharedSystemClient

from modrag_nodes.vectorstore import chroma_store as cs
from modrag_studio.engine.core.errors import NodeConfigError


def test_a_failed_first_open_is_retried_with_chromas_cached_system_dropped(tmp_path, monkeypatch):
    path = tmp_path / "chroma"
    real = chromadb.PersistentClient
    calls: list[str] = []

    def racing(*args, **kwargs):
        calls.append(kwargs["path"])
        if len(calls) == 1:  # as when the other process holds the new database mid-creation
            SharedSystemClient._identifier_to_system[kwargs["path"]] = object()
            raise RuntimeError("database is being created")
        assert kwargs["path"] not in SharedSystemClient._identifier_to_system
        return real(*args, **kwargs)

    monkeypatch.setattr(chromadb, "PersistentClient", racing)
    monkeypatch.setattr(cs.time, "sleep", lambda s: None)
    client = cs._make_client(("chroma-persistent", str(path)))
    assert len(calls) == 2
    assert client.list_collections() == []  # a working client on the new folder


def test_an_open_that_keeps_failing_names_the_folder(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("not a Chroma store")

    monkeypatch.setattr(chromadb, "PersistentClient", broken)
    monkeypatch.setattr(cs.time, "sleep", lambda s: None)
    with pytest.raises(NodeConfigError, match=r"cannot open the Chroma folder .*chroma.*"
                                              r"not a Chroma store"):
        cs._make_client(("chroma-persistent", str(tmp_path / "chroma")))
