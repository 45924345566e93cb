"""Subgraphs in the studio: the Edit menu's collapse, expand, open, link and detach actions,
and an opened subgraph's own window with the run's state on its inner nodes."""
