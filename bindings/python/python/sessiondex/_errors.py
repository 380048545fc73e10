"""The exception of every sessiondex error code.

The native module builds its exceptions here (``_from_native``), so a Rust ``Error`` becomes the
subclass of its stable code, with the code, the message and the structured details.
"""

from typing import Any, Dict, Optional, Type


class SessionDexError(Exception):
    """An error of sessiondex: ``.code`` is the stable snake_case code, ``.details`` the
    structured details (``candidates``, ``field``, ``index``, ...)."""

    code: str = "error"

    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        details: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: Dict[str, Any] = dict(details) if isinstance(details, dict) else {}
        if details is not None and not isinstance(details, dict):
            self.details = {"details": details}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __reduce__(self) -> Any:
        return (_from_native, (self.code, self.message, self.details or None))

    def to_dict(self) -> Dict[str, Any]:
        """``{"code", "message", **details}``, the JSON form of the error."""
        return {**self.details, "code": self.code, "message": self.message}


class InvalidRequestError(SessionDexError, ValueError):
    """The request is malformed: an unknown field, a wrong type, a missing or conflicting argument."""

    code = "invalid_request"


class InvalidQueryModeError(SessionDexError, ValueError):
    """``mode`` is not ``literal``, ``phrase``, ``regex`` or ``fuzzy``, or does not fit the request."""

    code = "invalid_query_mode"


class InvalidScopeError(SessionDexError, ValueError):
    """``scope`` is not ``session``, ``project``, ``global`` or ``session:<id-or-path>``, or cannot be resolved."""

    code = "invalid_scope"


class InvalidTimeError(SessionDexError, ValueError):
    """``since``/``until`` is not RFC 3339 or a date, or ``since`` is after ``until``."""

    code = "invalid_time"


class RegexPatternTooLongError(SessionDexError, ValueError):
    """The regex pattern is longer than ``regex_max_pattern_bytes``."""

    code = "regex_pattern_too_long"


class RegexTooLargeError(SessionDexError, ValueError):
    """The regex compiles to an automaton over the configured size limits."""

    code = "regex_too_large"


class InvalidRegexError(SessionDexError, ValueError):
    """The regex has a syntax error or uses a feature the DFA engine does not support."""

    code = "invalid_regex"


class SessionNotFoundError(SessionDexError, LookupError):
    """No session matches the given id or path."""

    code = "session_not_found"


class AmbiguousSessionError(SessionDexError, LookupError):
    """More than one session has the given id; ``details["candidates"]`` lists their paths."""

    code = "ambiguous_session"


class StalePointerError(SessionDexError):
    """The session changed since the pointer was made (``sourceHash``/``lineageFingerprint`` differ)."""

    code = "stale_pointer"


class AddressNotFoundError(SessionDexError, LookupError):
    """No record has the given entry id or operation address."""

    code = "address_not_found"


class AmbiguousAddressError(SessionDexError, LookupError):
    """More than one record has the given entry id or operation address."""

    code = "ambiguous_address"


class IndexOutOfBoundsError(SessionDexError, IndexError):
    """An index or range endpoint lies outside the session's records (never clamped)."""

    code = "index_out_of_bounds"


class IndexCorruptError(SessionDexError):
    """An index file failed its checks (checksum, version, truncation)."""

    code = "index_corrupt"


class IndexUnavailableError(SessionDexError):
    """The index directory cannot be opened, locked or created."""

    code = "index_unavailable"


class SourceUnreadableError(SessionDexError):
    """A session source file cannot be read."""

    code = "source_unreadable"


class UnknownFormatError(SessionDexError):
    """A source file is in no known session format."""

    code = "unknown_format"


class InvalidConfigError(SessionDexError, ValueError):
    """A configuration value is invalid."""

    code = "invalid_config"


class InvalidCallError(SessionDexError, ValueError):
    """A ``follow``/``next`` call is malformed or names an unknown ``ref``."""

    code = "invalid_call"


ERRORS: Dict[str, Type[SessionDexError]] = {
    cls.code: cls
    for cls in (
        InvalidRequestError,
        InvalidQueryModeError,
        InvalidScopeError,
        InvalidTimeError,
        RegexPatternTooLongError,
        RegexTooLargeError,
        InvalidRegexError,
        SessionNotFoundError,
        AmbiguousSessionError,
        StalePointerError,
        AddressNotFoundError,
        AmbiguousAddressError,
        IndexOutOfBoundsError,
        IndexCorruptError,
        IndexUnavailableError,
        SourceUnreadableError,
        UnknownFormatError,
        InvalidConfigError,
        InvalidCallError,
    )
}


def _from_native(code: str, message: str, details: Any = None) -> SessionDexError:
    """The exception of a code (``SessionDexError`` itself for a code added after this
    package was built)."""
    cls = ERRORS.get(code, SessionDexError)
    return cls(message, code=code, details=details)
