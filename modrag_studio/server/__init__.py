"""Serve a graph over HTTP (FastAPI): ``modrag serve GRAPH.json``. No Qt needed."""

from modrag_studio.server.app import ServerSettings, create_app

__all__ = ["ServerSettings", "create_app"]
