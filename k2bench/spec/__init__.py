"""The run spec: the one definition of every experiment parameter (schema.py) and the fully
resolved spec of one trial that the harness writes for the systems' processes (trial.py)."""
