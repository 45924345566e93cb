"""Text embedders: the EmbedderSpec data type and ``embed_texts``."""
