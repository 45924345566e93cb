"""Prompting, query-side and answer-side nodes."""
