"""What the application uses of the vector stores: the ``VectorIndex`` data type, a store's
vectors and search memo, and the Chroma collection calls, write lock and delete guard a
distributed index writes with."""

from modrag_nodes._public import family_api

__all__, __getattr__, __dir__ = family_api(__name__, {
    "chroma": ("ChromaParams", "ChromaStore", "check_delete_share", "delete_share_ok",
               "location", "open_for_write"),
    "chroma_store": ("META_DIM", "batches", "chunk_metadata", "client_for", "content_stamp",
                     "embedder_metadata", "get_collection", "input_stamp", "max_batch",
                     "stored_state"),
    "contracts": ("VectorIndex",),
    "handles": ("stored_vectors",),
    "search_memo": ("search_memo",),
    "write_lock": ("collection_lock",),
})
