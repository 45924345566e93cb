"""What the application uses of ingestion: loading files and BEIR corpora as the loader
node does, and the Markdown splitter."""

from modrag_nodes._public import family_api

__all__, __getattr__, __dir__ = family_api(__name__, {
    "loaders": ("LoadParams", "UnreadableFile", "beir_documents", "load_documents",
                "load_file", "match_files", "resolve_path"),
    "splitters": ("split_markdown",),
})
