"""GPT-NeoX: its YAML configs (detection, reading, writing) and its Framework."""
