"""Evaluation in the studio: sets, metrics on nodes, grids, variants and their comparison."""
