"""What the application uses of the recorded model calls: cassettes, opened for a block
(``using``) or replayed from a file (``replaying``)."""

from modrag_nodes._public import family_api

__all__, __getattr__, __dir__ = family_api(__name__, {
    "cassette": ("Cassette", "replaying", "using"),
})
