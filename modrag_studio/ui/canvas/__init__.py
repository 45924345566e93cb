"""The canvas: NodeGraphQt as a view of the editor model, its items, wires, navigation."""
