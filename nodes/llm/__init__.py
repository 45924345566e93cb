"""Chat models: the LLMSpec data type, backends (embedded, Ollama) and the ``chat`` call."""
