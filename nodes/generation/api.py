"""What the application uses of the generation nodes: the fact matcher the answer metrics
share with the answer-side nodes, and the lenient JSON reader of model replies."""

from modrag_nodes._public import family_api

__all__, __getattr__, __dir__ = family_api(__name__, {
    "fact_match": ("fact_found", "fact_recall", "is_refusal"),
    "messy_parsing": ("extract_json",),
})
