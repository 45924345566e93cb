"""Running a graph: the executor, its state, inputs, hooks, trace, pins and pre-flight."""
