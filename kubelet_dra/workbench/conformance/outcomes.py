"""How a check ends other than passing: the exceptions a check or its context raise, below both."""


class CheckFailed(Exception):
    """The driver broke the rule; the message says what was expected and what was seen."""


class CheckSkipped(Exception):
    """The check does not apply to this driver or setup; the message is the reason."""


class CheckBlocked(Exception):
    """The check cannot run because an earlier check failed on what it needs (the root cause); the report shows
    it under that cause instead of as one more failure with the same reason."""

    def __init__(self, cause: str, reason: str) -> None:
        super().__init__(reason)
        self.cause = cause
        """The id of the check whose failure this one would only repeat."""
