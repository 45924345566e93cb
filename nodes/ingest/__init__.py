"""Document loaders, splitters and smart ingest."""
