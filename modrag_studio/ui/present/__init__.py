"""Presentation mode: the replay, its plain-words narration, saved traces."""
