"""The Qt studio: canvas editor, run controller, overlays and inspector."""

from modrag_studio.ui.shell.startup import prepare_canvas_imports

prepare_canvas_imports()
