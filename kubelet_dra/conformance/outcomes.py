"""How a check ends other than passing: the two exceptions a check or its context raise, below both."""


class CheckFailed(Exception):
    """The driver broke the rule; the message says what was expected and what was seen."""


class CheckSkipped(Exception):
    """The check does not apply to this driver or setup; the message is the reason."""
