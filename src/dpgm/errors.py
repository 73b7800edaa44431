"""Exceptions raised by dpgm: each says what was wrong with the input, in the user's terms."""


class DpgmError(ValueError):
    """Base class of dpgm's input errors."""


class DomainError(DpgmError):
    """An attribute is unknown, repeated, or has an invalid size."""


class DataError(DpgmError):
    """A record does not fit the public domain (missing column, NaN, value out of range)."""


class PrivacyParameterError(DpgmError):
    """A privacy parameter is out of range (epsilon <= 0, delta outside (0, 1), ...)."""


class BudgetExceededError(DpgmError):
    """A measurement would spend more privacy budget than is left."""


class ModelTooLargeError(DpgmError):
    """A table or junction tree would not fit in memory."""
