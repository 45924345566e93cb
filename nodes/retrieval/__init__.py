"""Sparse retrieval (BM25), rank fusion, rerankers and dense retrieval."""
