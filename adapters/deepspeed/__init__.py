"""DeepSpeed: its JSON config (reading, writing) and its Framework."""
