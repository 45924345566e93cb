"""Subgraphs: collapsing nodes into one, expanding them back, component files, and the
expansion every run and every validation works on (inner nodes as ``sub_id/inner_id``)."""
