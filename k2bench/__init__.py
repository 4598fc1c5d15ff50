"""k2bench: run experiments on the bundled systems and collect the runs."""
