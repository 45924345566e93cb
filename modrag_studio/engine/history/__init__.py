"""Run history: every recorded run of a graph, stored beside the node cache."""
