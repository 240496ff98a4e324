"""Runs brought back from other engines (`mvp import-run`, docs/scale.md "Bringing a run back"):
read their logged generations (readers.py), place each on its puzzle and score it with the
project's reward (match.py), and name the checkpoint folders by step (checkpoints.py). Pure: no
database; db/runs/imported.py stores the result."""
