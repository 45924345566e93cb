"""Running the ingest part of a graph and evaluations on a Ray cluster (optional extra).

``modrag index GRAPH --ray ADDRESS`` and ``modrag eval ... --ray ADDRESS`` use it; Ray is only
imported when asked for, and a missing Ray says how to install it.
"""
