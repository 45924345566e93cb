"""Knowledge-graph extraction, storage and retrieval."""
