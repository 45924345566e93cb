"""Evaluation nodes: the answer judge."""
