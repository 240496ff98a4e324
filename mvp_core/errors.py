"""Errors that carry a one-line message meant for the user (the CLI prints it without a traceback)."""


class UserError(Exception):
    """Bad input from the user: a path that is not a model, a malformed config value, ..."""


class VideoError(Exception):
    """A file that cannot be used as a video; the message is the one-line reason shown in summaries."""
