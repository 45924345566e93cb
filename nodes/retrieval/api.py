"""What the application uses of retrieval: the BM25 index and its params, the chunk text
it indexes, its tokenizers and the top-k ranking."""

from modrag_nodes._public import family_api

__all__, __getattr__, __dir__ = family_api(__name__, {
    "bm25": ("BM25Index", "BM25IndexParams", "chunk_text"),
    "ranking": ("top_indices",),
    "tokenizers": ("Tokenizer",),
})
