"""Recorded model calls (cassettes): record every chat and embedder call of a run to a file,
answer them from it later with no model loaded, or check the live model against it."""
