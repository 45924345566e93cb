"""The Qt studio: canvas editor, run controller, overlays and inspector."""
