"""What the application uses of the chat models: the ``LLMSpec`` data type, the ``chat``
call and the choice of an embedded model."""

from modrag_nodes._public import family_api

__all__, __getattr__, __dir__ = family_api(__name__, {
    "client": ("LLMSpec", "chat"),
    "pickers": ("best_embedded_model",),
})
