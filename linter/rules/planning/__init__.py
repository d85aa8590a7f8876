"""TL5xx: planning findings on the whole run (tokens, duration, cost)."""
