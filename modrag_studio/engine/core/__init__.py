"""The graph model: documents, typed ports, the node API, the registry, validation."""
