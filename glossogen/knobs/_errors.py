"""The one error every knobs step raises, carrying the process exit code it maps to."""

from __future__ import annotations

from glossogen import exit_codes

EXIT_REFUSED = int(exit_codes.REFUSED)
"""Exit code of a refused configuration: invalid JSON, unknown knob, value out of bounds."""

EXIT_UNREADABLE = int(exit_codes.UNREADABLE)
"""Exit code of an input that cannot be read, such as a ``--config`` path that does not exist."""


class ConfigError(Exception):
    """A configuration the run refuses, before any run folder is claimed.

    ``str()`` is one line that names the bad value or knob and says why, ready for the launch's
    stdout log. The CLI exits with :attr:`exit_code`.

    Attributes:
        message: The one-line explanation (newlines folded into spaces).
        exit_code: 65 (:data:`EXIT_REFUSED`) for a refused or invalid config, 66
            (:data:`EXIT_UNREADABLE`) for an input that cannot be read.
    """

    def __init__(self, message: str, *, exit_code: int = EXIT_REFUSED) -> None:
        """Build the error.

        Args:
            message: What is wrong and with which value or knob; folded onto one line.
            exit_code: The process exit code, 65 or 66.
        """
        self.message = " ".join(message.splitlines())
        self.exit_code = exit_code
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message
