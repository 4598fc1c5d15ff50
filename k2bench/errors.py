"""Bad input: one line that names the field and says how to fix it."""


class ConfigError(Exception):
    """A problem with an experiment file, a flag or another input, found before anything starts."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class RunFailed(Exception):
    """A run could not complete (a process crashed, a phase timed out, the user interrupted)."""
