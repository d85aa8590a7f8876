"""JSON and YAML trees with a position for every key and value."""
