"""Bad input: one line that names the field and says how to fix it."""
from __future__ import annotations

import difflib
from collections.abc import Iterable


class ConfigError(Exception):
    """A problem with an experiment file, a flag or another input, found before anything starts.
    ``file``, when known, is the user's file the field is in; the message starts with it (a
    problem with the file as a whole names it as its field)."""

    def __init__(self, field: str, problem: str, file: str | None = None):
        super().__init__((f"{file}: " if file and file != field else "") + f"{field}: {problem}")
        self.field = field
        self.problem = problem
        self.file = file

    def in_file(self, file) -> "ConfigError":
        """This error said of ``file``, unless it already names a file."""
        return self if self.file else ConfigError(self.field, self.problem, str(file))


def did_you_mean(name, choices: Iterable) -> str:
    """" (did you mean X?)" for the known name closest to a refused one, or "" when none is
    close (difflib's ratio at least 0.6): what goes after the refused name in a message."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


class RunFailed(Exception):
    """A run could not complete (a process crashed, a phase timed out, the user interrupted)."""
