"""What the application uses of the embedders: the ``EmbedderSpec`` data type and its calls,
token counts against an embedder's window, the query-vector memo, and the embedding node and
hashes a distributed index writes with."""

from modrag_nodes._public import family_api

__all__, __getattr__, __dir__ = family_api(__name__, {
    "contracts": ("content_hash", "record_hash"),
    "embedder": ("DEFAULT_MODEL", "EmbedderSpec"),
    "memo": ("query_vector_memo", "remember"),
    "models": ("embed", "embedding_dim"),
    "nodes": ("EmbedChunks", "EmbedChunksParams"),
    "onnx_bert": ("limit_threads",),
    "spec": ("embed_texts",),
    "tokens": ("embedder_window", "spec_token_counts", "token_counts"),
})
