"""The editable graph model behind the canvas (undoable commands) and variants."""
