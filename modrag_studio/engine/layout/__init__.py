"""Placing a graph on a canvas without Qt: layered and banded layouts, wire routes, renderings."""
