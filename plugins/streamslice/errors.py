"""Errors a user can act on. Each one says what went wrong and where, never a bare traceback."""


class StreamsliceError(Exception):
    """Base class: the message is meant for the operator."""


class ConfigError(StreamsliceError):
    """A pipeline file (or data source option) is invalid."""

    def __init__(self, message, *, file=None, line=None, field=None):
        self.file, self.line, self.field, self.reason = file, line, field, message
        where = ""
        if file:
            where = f"{file}:{line}: " if line else f"{file}: "
        what = f"{field}: " if field else ""
        super().__init__(f"{where}{what}{message}")


class SourceError(StreamsliceError):
    """The source (broker, stream) cannot be reached or does not have what the plan needs."""


class DataLossError(StreamsliceError):
    """Records the plan needs have expired or were trimmed before they could be read."""

    def __init__(self, message, gaps=()):
        super().__init__(message)
        self.gaps = list(gaps)


class PlanError(StreamsliceError):
    """A plan cannot be built or does not match what was read."""


class CommitError(StreamsliceError):
    """The staged output failed verification or could not be published."""


class DecodeError(StreamsliceError):
    """A record could not be decoded and the pipeline is set to fail on decode errors."""
