"""The side panels: palette, properties, problems, model pickers."""
