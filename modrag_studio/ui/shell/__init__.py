"""The window and what holds it together: start-up, the main window, files, exports, start page."""
