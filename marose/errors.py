"""The one exception type for errors a user can cause."""


class MaroseError(Exception):
    """Bad input, a bad index or a bad option: printed without a traceback."""
