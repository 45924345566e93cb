"""Vector stores (Chroma, embedded or server)."""
