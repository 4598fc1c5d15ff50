"""Bad input: one line that names the field and says how to fix it."""
from __future__ import annotations

import contextlib
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

    def in_file(self, file) -> ConfigError:
        """This error said of ``file``, unless it already names a file."""
        return self if self.file else ConfigError(self.field, self.problem, str(file))

    @property
    def errors(self) -> list[ConfigError]:
        """The problems this error stands for, one line each: itself."""
        return [self]

    @staticmethod
    def of(errors: list[ConfigError]) -> ConfigError:
        """One error for these problems: the one, or ConfigErrors for several."""
        flat = [x for e in errors for x in e.errors]
        return flat[0] if len(flat) == 1 else ConfigErrors(flat)


class ConfigErrors(ConfigError):
    """Several independent problems of one input, found together so that one run of a command
    shows them all: ``errors``, each a ConfigError of its own (the first's field, problem and
    file are this one's); its text is their lines."""

    def __init__(self, errors: list[ConfigError]):
        first = errors[0]
        super().__init__(first.field, first.problem, first.file)
        self._errors = list(errors)
        self.args = ("\n".join(str(e) for e in self._errors),)

    @property
    def errors(self) -> list[ConfigError]:
        return list(self._errors)

    def in_file(self, file) -> ConfigError:
        return ConfigErrors([e.in_file(file) for e in self._errors])


class Collect:
    """Independent checks whose problems are all reported: each runs in ``check()``, which
    keeps its ConfigError; ``done()`` raises what was kept (one error, or ConfigErrors)."""

    def __init__(self):
        self.errors: list[ConfigError] = []

    @contextlib.contextmanager
    def check(self):
        try:
            yield
        except ConfigError as e:
            self.errors += e.errors

    def done(self) -> None:
        if self.errors:
            raise ConfigError.of(self.errors)


def did_you_mean(name, choices: Iterable, cutoff: float = 0.6) -> str:
    """" (did you mean X?)" for the known name closest to a refused one, or "" when none is
    close (difflib's ratio at least ``cutoff``): what goes after the refused name in a message."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=cutoff)
    return f" (did you mean {close[0]}?)" if close else ""


class RunFailed(Exception):
    """A run could not complete (a process crashed, a phase timed out, the user interrupted)."""
