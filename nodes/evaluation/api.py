"""What the application uses of the evaluation nodes: the answer judge."""

from modrag_nodes._public import family_api

__all__, __getattr__, __dir__ = family_api(__name__, {
    "judge": ("chat_asker", "judge_answer"),
})
