"""Grounding: the checkable claims of an answer looked up in its evidence (no model call),
the refusal that names what the evidence lacks, and the supporting quotes."""
