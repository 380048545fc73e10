"""sessiondex: a fast, honest memory of coding agent sessions.

One object, :class:`Memory`, over the session logs of pi, oh-my-pi, Claude Code and Codex CLI::

    import sessiondex

    memory = sessiondex.Memory(["examples/sessions"], index_dir="/tmp/sdx-index")
    memory.sync()
    page = memory.recall("timeout", scope="global")
    for hit in page.hits:
        print(hit.file, hit.index, hit.snippet)
    failed = memory.walk().to_pandas().query("outcome == 'failed'")

Results are small classes whose attributes are named like the JSON fields of ``docs/query.md``
in snake_case; every one converts with ``.to_dict()``. Errors are :class:`SessionDexError`
subclasses, one per stable code. The work happens in Rust with the GIL released; a
:class:`Memory` is safe to share between threads.
"""

import os
import re
import sys
from collections import deque
from datetime import date, datetime, timezone
from typing import (
    Any,
    Callable,
    ClassVar,
    Deque,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _sessiondex
from ._errors import ERRORS as _ERRORS
from ._errors import (
    AddressNotFoundError,
    AmbiguousAddressError,
    AmbiguousSessionError,
    IndexCorruptError,
    IndexOutOfBoundsError,
    IndexUnavailableError,
    InvalidCallError,
    InvalidConfigError,
    InvalidQueryModeError,
    InvalidRegexError,
    InvalidRequestError,
    InvalidScopeError,
    InvalidTimeError,
    RegexPatternTooLongError,
    RegexTooLargeError,
    SessionDexError,
    SessionNotFoundError,
    SourceUnreadableError,
    StalePointerError,
    UnknownFormatError,
)

__version__: str = _sessiondex.__version__

# Tracebacks and reprs name the public module.
for _cls in (SessionDexError, *_ERRORS.values()):
    _cls.__module__ = "sessiondex"
del _cls

__all__ = [
    "Memory",
    "SyncReport",
    "IndexCoverage",
    "ReasonCount",
    "RecallPage",
    "Hit",
    "Snippet",
    "StructuralEntry",
    "Coverage",
    "Call",
    "ExpandResult",
    "ExpandedEntry",
    "TextRange",
    "SessionRef",
    "Record",
    "Walk",
    "Session",
    "SessionList",
    "SessionLink",
    "Trace",
    "TraceStep",
    "SessionDexError",
    "InvalidRequestError",
    "InvalidQueryModeError",
    "InvalidScopeError",
    "InvalidTimeError",
    "RegexPatternTooLongError",
    "RegexTooLargeError",
    "InvalidRegexError",
    "SessionNotFoundError",
    "AmbiguousSessionError",
    "StalePointerError",
    "AddressNotFoundError",
    "AmbiguousAddressError",
    "IndexOutOfBoundsError",
    "IndexCorruptError",
    "IndexUnavailableError",
    "SourceUnreadableError",
    "UnknownFormatError",
    "InvalidConfigError",
    "InvalidCallError",
    "default_sources",
    "default_index_dir",
    "default_config",
    "tokenize",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]
TimeLike = Union[str, datetime, date]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def _plain(value: Any) -> Any:
    if isinstance(value, _Object):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _require(module: str, extra: str) -> Any:
    try:
        return __import__(module)
    except ImportError as e:
        raise ImportError(
            f"this needs {module}: pip install 'sessiondex[{extra}]' (or pip install {module})"
        ) from e


class _Object:
    """A result: attributes from the wire form's fields, in snake_case.

    ``_fields`` lists ``(attribute, wire key, kind)``: ``kind`` is ``None`` (the value as is,
    ``None`` when absent), ``list`` (a list, ``[]`` when absent), a result class, or a
    one-element list ``[cls]`` (a list of that class).
    """

    _fields: ClassVar[Tuple[Tuple[str, str, Any], ...]] = ()

    def __init__(self, data: Mapping[str, Any]) -> None:
        for attr, key, kind in self._fields:
            v = data.get(key)
            if kind is list:
                v = list(v) if v is not None else []
            elif isinstance(kind, list):
                v = [kind[0](x) for x in v] if v is not None else []
            elif kind is not None and v is not None:
                v = kind(v)
            setattr(self, attr, v)

    def to_dict(self) -> Dict[str, Any]:
        """The fields as a dict (snake_case keys; nested results as dicts, calls in their
        wire form)."""
        return {attr: _plain(getattr(self, attr)) for attr, _, _ in self._fields}

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _Object)
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def _repr_fields(self, *names: str) -> str:
        parts = []
        for n in names:
            v = getattr(self, n)
            if v is None or v == []:
                continue
            if isinstance(v, str) and len(v) > 60:
                v = v[:57] + "..."
            parts.append(f"{n}={v!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __repr__(self) -> str:
        return self._repr_fields(*(a for a, _, _ in self._fields[:4]))


def _fields(*spec: Any) -> Tuple[Tuple[str, str, Any], ...]:
    out = []
    for s in spec:
        if isinstance(s, str):
            out.append((_snake(s), s, None))
        else:
            wire, kind = s[0], s[1]
            attr = s[2] if len(s) > 2 else _snake(wire)
            out.append((attr, wire, kind))
    return tuple(out)


class ReasonCount(_Object):
    """One reason with the number of sessions (or files) it applies to."""

    code: str
    count: int
    _fields = _fields("code", "count")

    def __repr__(self) -> str:
        return f"ReasonCount({self.code!r}, {self.count})"


class IndexCoverage(_Object):
    """Coverage of the index after a sync: whether an empty answer is authoritative."""

    complete: bool
    indexed_sessions: int
    eligible_sessions: int
    stale_sessions: int
    incomplete_sessions: int
    reasons: List[ReasonCount]
    _fields = _fields(
        "complete",
        "indexedSessions",
        "eligibleSessions",
        "staleSessions",
        "incompleteSessions",
        ("reasons", [ReasonCount]),
    )

    def __repr__(self) -> str:
        reasons = ", ".join(f"{r.code} x{r.count}" for r in self.reasons)
        state = "complete" if self.complete else "incomplete"
        return (
            f"IndexCoverage({state}, {self.indexed_sessions}/{self.eligible_sessions} sessions"
            + (f", {reasons}" if reasons else "")
            + ")"
        )


class SyncReport(_Object):
    """What a sync did."""

    indexed: int
    reused: int
    removed: int
    failed: int
    bytes_read: int
    bytes_parsed: int
    appended: int
    coverage: IndexCoverage
    _fields = _fields(
        "indexed",
        "reused",
        "removed",
        "failed",
        "bytesRead",
        "bytesParsed",
        "appended",
        ("coverage", IndexCoverage),
    )

    def __repr__(self) -> str:
        return (
            f"SyncReport(indexed={self.indexed}, reused={self.reused}, removed={self.removed}, "
            f"failed={self.failed}, appended={self.appended}, coverage={self.coverage!r})"
        )


class Coverage(_Object):
    """Whether an empty result is authoritative (``complete``), and why not (``reasons``)."""

    complete: bool
    indexed_sessions: int
    eligible_sessions: int
    stale_sessions: int
    incomplete_sessions: int
    reasons: List[str]
    error: Optional[Dict[str, Any]]
    _fields = _fields(
        "complete",
        "indexedSessions",
        "eligibleSessions",
        "staleSessions",
        "incompleteSessions",
        ("reasons", list),
        ("error", dict),
    )

    def __repr__(self) -> str:
        state = "complete" if self.complete else "incomplete"
        extra = f", reasons={self.reasons!r}" if self.reasons else ""
        if self.error:
            extra += f", error={self.error.get('code')!r}"
        return (
            f"Coverage({state}, {self.indexed_sessions}/{self.eligible_sessions} sessions"
            f"{extra})"
        )


class Call(_Object):
    """A call to pass back unchanged (a hit's ``follow``, a page's ``next``): run it with
    :meth:`Memory.call`. Its dict form is the wire form ``{"ref", "args"}``."""

    ref: str
    args: Dict[str, Any]

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._wire = dict(data)
        self.ref = self._wire.get("ref")  # type: ignore[assignment]
        self.args = self._wire.get("args")  # type: ignore[assignment]

    def to_dict(self) -> Dict[str, Any]:
        """The call exactly as it was made: ``{"ref": ..., "args": {...}}``."""
        import copy

        return copy.deepcopy(self._wire)

    def __repr__(self) -> str:
        args = self.args if isinstance(self.args, dict) else {}
        shown = {k: v for k, v in args.items() if k not in ("sourceHash", "lineageFingerprint")}
        text = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        if len(text) > 100:
            text = text[:97] + "..."
        return f"Call({self.ref}: {text})"


class Snippet(_Object):
    """A bounded excerpt with highlights (``(start, end)`` character offsets)."""

    text: str
    truncated: bool
    highlights: List[Tuple[int, int]]
    _fields = _fields("text", "truncated", ("highlights", list))

    def __init__(self, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        self.highlights = [tuple(h) for h in self.highlights]  # type: ignore[misc]

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        text = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        return f"Snippet({text!r})"


class StructuralEntry(_Object):
    """A structural entry of a cold session that matched the filters."""

    index: int
    entry_id: Optional[str]
    operation_address: Optional[str]
    _fields = _fields("index", "entryId", "operationAddress")


class Hit(_Object):
    """One ranked result: an ``entry``, or a cold ``session`` candidate whose ``follow``
    hydrates it. ``snippet_unavailable`` (``"stale_pointer"`` or ``"source_unreadable"``)
    says why an entry hit has no snippet when its matches lie past the stored cut and its
    source could not be re-read as indexed."""

    kind: str
    session_id: str
    file: str
    entry_id: Optional[str]
    index: Optional[int]
    operation_address: Optional[str]
    role: Optional[str]
    tool: Optional[str]
    outcome: Optional[str]
    timestamp: Optional[str]
    score: float
    snippet: Optional[Snippet]
    snippet_unavailable: Optional[str]
    matched_terms: List[str]
    matched_structural_entries: List[StructuralEntry]
    matched_in: List[str]
    follow: Call
    _fields = _fields(
        "kind",
        "sessionId",
        "file",
        "entryId",
        "index",
        "operationAddress",
        "role",
        "tool",
        "outcome",
        "timestamp",
        "score",
        ("snippet", Snippet),
        "snippetUnavailable",
        ("matchedTerms", list),
        ("matchedStructuralEntries", [StructuralEntry]),
        ("matchedIn", list),
        ("follow", Call),
    )

    def __repr__(self) -> str:
        where = os.path.basename(self.file)
        if self.kind == "entry":
            where += f"#{self.index}"
        parts = [self.kind, where, f"score={self.score:.3g}"]
        for n in ("role", "tool", "outcome"):
            v = getattr(self, n)
            if v is not None:
                parts.append(f"{n}={v}")
        if self.snippet is not None:
            parts.append(repr(self.snippet.text[:50] + ("..." if len(self.snippet.text) > 50 else "")))
        elif self.snippet_unavailable is not None:
            parts.append(f"snippet_unavailable={self.snippet_unavailable}")
        elif self.matched_terms:
            parts.append(f"matched_terms={self.matched_terms!r}")
        return f"Hit({' '.join(parts)})"


_HIT_COLUMNS = [a for a, _, _ in Hit._fields]


class RecallPage(_Object):
    """One page of a recall: ``total`` retained hits, this page's ``hits``, the ``next``
    call (or ``None``) and the ``coverage``."""

    total: int
    hits: List[Hit]
    next: Optional[Call]
    coverage: Coverage
    error: Optional[Dict[str, Any]]
    _fields = _fields(
        "total",
        ("hits", [Hit]),
        ("next", Call),
        ("coverage", Coverage),
        ("error", dict),
    )

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, i: int) -> Hit:
        return self.hits[i]

    def to_pandas(self) -> Any:
        """This page's hits as a DataFrame (``snippet`` as its text, ``follow`` as a dict)."""
        pd = _require("pandas", "pandas")
        rows = []
        for h in self.hits:
            d = h.to_dict()
            d["snippet"] = h.snippet.text if h.snippet is not None else None
            rows.append(d)
        df = pd.DataFrame(rows, columns=_HIT_COLUMNS)
        df["timestamp"] = pd.to_datetime(df["timestamp"], utc=True, format="ISO8601")
        return df

    def __repr__(self) -> str:
        more = ", next" if self.next is not None else ""
        return f"RecallPage(total={self.total}, hits={len(self.hits)}{more}, {self.coverage!r})"


class SessionRef(_Object):
    """The session an expansion or walk read, with the integrity bindings of that read."""

    session_id: str
    file: str
    format: Optional[str]
    branches: str
    source_hash: str
    lineage_fingerprint: str
    entries: int
    _fields = _fields(
        "sessionId", "file", "format", "branches", "sourceHash", "lineageFingerprint", "entries"
    )

    def __repr__(self) -> str:
        return (
            f"SessionRef({self.session_id!r}, {os.path.basename(self.file)!r}, "
            f"format={self.format!r}, entries={self.entries})"
        )


_RECORD_WIRE = (
    "sessionId",
    "file",
    "index",
    "entryId",
    "parentId",
    "logicalParentId",
    "type",
    "role",
    "tool",
    "ref",
    "provider",
    "action",
    "outcome",
    "timestamp",
    "isError",
    ("filesTouched", list),
    "text",
    "thinking",
    "operationAddress",
    "parentEntryId",
    "callId",
    ("class", None, "class_"),
    "sidechain",
    "line",
    "offset",
)


class Record(_Object):
    """One normalized record of a session (``class_`` is the JSON field ``class``)."""

    session_id: Optional[str]
    file: Optional[str]
    index: int
    entry_id: str
    parent_id: Optional[str]
    logical_parent_id: Optional[str]
    type: str
    role: Optional[str]
    tool: Optional[str]
    ref: Optional[str]
    provider: Optional[str]
    action: Optional[str]
    outcome: Optional[str]
    timestamp: Optional[str]
    is_error: Optional[bool]
    files_touched: List[str]
    text: str
    thinking: Optional[str]
    operation_address: Optional[str]
    parent_entry_id: Optional[str]
    call_id: Optional[str]
    class_: str
    sidechain: bool
    line: int
    offset: int
    _fields = _fields(*_RECORD_WIRE)

    def __init__(self, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        self.sidechain = bool(self.sidechain)

    def __repr__(self) -> str:
        parts = [f"#{self.index}", self.type]
        for n in ("role", "tool", "outcome"):
            v = getattr(self, n)
            if v is not None:
                parts.append(f"{n}={v}")
        text = self.text if len(self.text) <= 50 else self.text[:47] + "..."
        parts.append(repr(text))
        return f"Record({' '.join(parts)})"


_RECORD_COLUMNS = [a for a, _, _ in Record._fields]
_RECORD_KEYS = [(a, w, k) for a, w, k in Record._fields]


class TextRange(_Object):
    """Which characters of a record's text an expansion carries."""

    start: int
    end: int
    total: int
    complete: bool
    _fields = _fields("start", "end", "total", "complete")


class ExpandedEntry(Record):
    """An expanded record: a :class:`Record` (its ``text`` possibly one chunk) and its
    ``text_range``."""

    text_range: TextRange
    _fields = Record._fields + _fields(("textRange", TextRange))


class ExpandResult(_Object):
    """The answer of :meth:`Memory.expand`: the ``session`` read, its ``entries``, the
    ``next`` call for the rest (or ``None``) and the ``coverage``."""

    session: SessionRef
    entries: List[ExpandedEntry]
    next: Optional[Call]
    coverage: Coverage
    _fields = _fields(
        ("session", SessionRef),
        ("entries", [ExpandedEntry]),
        ("next", Call),
        ("coverage", Coverage),
    )

    def __iter__(self) -> Iterator[ExpandedEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i: int) -> ExpandedEntry:
        return self.entries[i]

    def __repr__(self) -> str:
        more = ", next" if self.next is not None else ""
        return (
            f"ExpandResult({os.path.basename(self.session.file)!r}, "
            f"entries={len(self.entries)}{more}, {self.coverage!r})"
        )


def _record_row(d: Mapping[str, Any]) -> List[Any]:
    row = []
    for _attr, key, kind in _RECORD_KEYS:
        v = d.get(key)
        if kind is list and v is None:
            v = []
        row.append(v)
    return row


class Walk:
    """An iterator of :class:`Record`: one session, or every session file of the sources.

    Records are read in batches with the GIL released. ``to_pandas()`` and ``to_arrow()``
    consume the rest of the walk into a table with one row per record.
    """

    def __init__(self, native: Any) -> None:
        self._native = native
        self._buffer: Deque[Dict[str, Any]] = deque()
        self._done = False
        self.session: Optional[SessionRef] = None
        self.coverage: Optional[Coverage] = None

    def _fill(self) -> bool:
        while not self._buffer:
            if self._done:
                return False
            batch = self._native.next_batch()
            if batch is None:
                self._done = True
                return False
            session, coverage, records = batch
            self.session = SessionRef(session)
            self.coverage = Coverage(coverage)
            self._buffer.extend(records)
        return True

    def __iter__(self) -> "Walk":
        return self

    def __next__(self) -> Record:
        if not self._fill():
            raise StopIteration
        return Record(self._buffer.popleft())

    def _rest(self) -> List[Dict[str, Any]]:
        out: List[Dict[str, Any]] = []
        while self._fill():
            out.extend(self._buffer)
            self._buffer.clear()
        return out

    @property
    def skipped(self) -> List[Dict[str, str]]:
        """Files of the sources that could not be walked so far: ``{"file", "code", "message"}``."""
        return [
            {"file": f, "code": c, "message": m} for f, c, m in self._native.skipped()
        ]

    def to_dict(self) -> Dict[str, Any]:
        """The rest of the walk: ``{"records": [...], "skipped": [...]}`` (consumes it)."""
        records = [Record(d).to_dict() for d in self._rest()]
        return {"records": records, "skipped": self.skipped}

    def to_pandas(self) -> Any:
        """The rest of the walk as a DataFrame, one row per record, columns named like
        :class:`Record`'s attributes; ``timestamp`` as UTC datetimes. Needs the ``pandas``
        extra."""
        pd = _require("pandas", "pandas")
        rows = [_record_row(d) for d in self._rest()]
        df = pd.DataFrame(rows, columns=_RECORD_COLUMNS)
        df["timestamp"] = pd.to_datetime(df["timestamp"], utc=True, format="ISO8601")
        return df

    def to_arrow(self) -> Any:
        """The rest of the walk as a ``pyarrow.Table``, one row per record. Needs the
        ``arrow`` extra."""
        pa = _require("pyarrow", "arrow")
        rows = [_record_row(d) for d in self._rest()]
        columns = list(zip(*rows)) if rows else [()] * len(_RECORD_COLUMNS)
        arrays = []
        for name, values in zip(_RECORD_COLUMNS, columns):
            typ = _ARROW_TYPES.get(name, "string")
            if typ == "timestamp":
                arr = pa.array(values, pa.string()).cast(pa.timestamp("ms", tz="UTC"))
            elif typ == "list":
                arr = pa.array(values, pa.list_(pa.string()))
            else:
                arr = pa.array(values, getattr(pa, typ)())
            arrays.append(arr)
        return pa.Table.from_arrays(arrays, names=_RECORD_COLUMNS)

    def __repr__(self) -> str:
        if self.session is None:
            return "Walk(not started)"
        return f"Walk(at {self.session!r})"


_ARROW_TYPES = {
    "index": "int64",
    "line": "int64",
    "offset": "int64",
    "is_error": "bool_",
    "sidechain": "bool_",
    "files_touched": "list",
    "timestamp": "timestamp",
}


class SessionLink(_Object):
    """A link from one session to another (``parent_session``, ``branched_from``,
    ``forked_from``, ``subagent_of``)."""

    kind: str
    target: str
    _fields = _fields("kind", "target")

    def __repr__(self) -> str:
        return f"SessionLink({self.kind} -> {self.target!r})"


class Session(_Object):
    """One indexed session as :meth:`Memory.sessions` and :meth:`Memory.trace` list it."""

    session_id: str
    file: str
    format: Optional[str]
    cwd: Optional[str]
    title: Optional[str]
    created: Optional[str]
    first_ts: Optional[str]
    last_ts: Optional[str]
    entry_count: int
    error_count: int
    tier: str
    availability: str
    links: List[SessionLink]
    source_hash: str
    lineage_fingerprint: str
    complete: bool
    reasons: List[str]
    _fields = _fields(
        "sessionId",
        "file",
        "format",
        "cwd",
        "title",
        "created",
        "firstTs",
        "lastTs",
        "entryCount",
        "errorCount",
        "tier",
        "availability",
        ("links", [SessionLink]),
        "sourceHash",
        "lineageFingerprint",
        "complete",
        ("reasons", list),
    )

    def __repr__(self) -> str:
        return (
            f"Session({self.session_id!r}, {self.format}, {self.entry_count} entries, "
            f"{self.tier}, last_ts={self.last_ts!r})"
        )


_SESSION_COLUMNS = [a for a, _, _ in Session._fields]


class SessionList(List[Session]):
    """The sessions of :meth:`Memory.sessions`, newest first: a list, with the ``total``
    that passed the filters (before ``limit``) and the ``coverage`` of the listing."""

    total: int
    coverage: Coverage

    def __init__(self, data: Mapping[str, Any]) -> None:
        super().__init__(Session(s) for s in data.get("sessions", []))
        self.total = data.get("total", len(self))
        self.coverage = Coverage(data.get("coverage", {}))

    def to_dict(self) -> Dict[str, Any]:
        """``{"total", "sessions": [...], "coverage"}``."""
        return {
            "total": self.total,
            "sessions": [s.to_dict() for s in self],
            "coverage": self.coverage.to_dict(),
        }

    def to_pandas(self) -> Any:
        """One row per session, columns named like :class:`Session`'s attributes; the
        times as UTC datetimes. Needs the ``pandas`` extra."""
        pd = _require("pandas", "pandas")
        df = pd.DataFrame([s.to_dict() for s in self], columns=_SESSION_COLUMNS)
        for c in ("created", "first_ts", "last_ts"):
            df[c] = pd.to_datetime(df[c], utc=True, format="ISO8601")
        return df

    def __repr__(self) -> str:
        shown = ", ".join(repr(s) for s in self[:3])
        more = f", ... {len(self) - 3} more" if len(self) > 3 else ""
        return f"SessionList(total={self.total}, [{shown}{more}])"


class TraceStep(_Object):
    """One step of a trace: the ``link`` followed, its ``depth`` and the ``session``."""

    link: SessionLink
    depth: int
    session: Session
    _fields = _fields(("link", SessionLink), "depth", ("session", Session))

    def __repr__(self) -> str:
        return f"TraceStep({self.depth}, {self.link.kind}, {self.session.session_id!r})"


class Trace(_Object):
    """A session's lineage: ``ancestors`` (nearest first), the ``root`` or the
    ``unresolved_parent``, ``descendants`` (breadth first), and whether a ``cycle`` stopped
    the walk."""

    session: Session
    ancestors: List[TraceStep]
    root: Optional[Session]
    unresolved_parent: Optional[SessionLink]
    descendants: List[TraceStep]
    cycle: bool
    _fields = _fields(
        ("session", Session),
        ("ancestors", [TraceStep]),
        ("root", Session),
        ("unresolvedParent", SessionLink),
        ("descendants", [TraceStep]),
        "cycle",
    )

    def __repr__(self) -> str:
        return (
            f"Trace({self.session.session_id!r}, ancestors={len(self.ancestors)}, "
            f"descendants={len(self.descendants)}, cycle={self.cycle})"
        )


def _time(value: Any) -> Any:
    """RFC 3339 (UTC, milliseconds) for a datetime (naive means UTC), ``YYYY-MM-DD`` for a
    date; anything else unchanged."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        value = value.astimezone(timezone.utc)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, date):
        return value.isoformat()
    return value


def _path(value: Any) -> Any:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def _dir(value: Any) -> Any:
    """A ``cwd`` as the absolute path sessions record: a relative one is taken from the
    process's directory, ``.`` and ``..`` resolved as the CLI resolves them (left as given,
    it would match no session, and the empty answer would say it was complete)."""
    value = _path(value)
    return str(_sessiondex.absolute_path(value)) if isinstance(value, str) and value else value


def _many(value: Any) -> Any:
    if value is None or isinstance(value, (str, int)):
        return None if value is None else [value]
    return list(value)


def _wire(**fields: Any) -> Dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _progress(progress: Any) -> Tuple[Optional[Callable[[int, int], Any]], Any]:
    if progress is None or progress is False:
        return None, None
    if progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            def text(done: int, total: int) -> None:
                end = "\n" if done >= total else ""
                print(f"\rsessiondex sync: {done}/{total} sessions", end=end, file=sys.stderr)

            return text, None
        bar = tqdm(total=0, unit="session", desc="sessiondex sync")

        def update(done: int, total: int) -> None:
            if bar.total != total:
                bar.total = total
            bar.n = done
            bar.refresh()

        return update, bar
    if callable(progress):
        return progress, None
    raise TypeError("progress is None, True, or a callable receiving (done, total)")


class Memory:
    """A memory of past sessions: the ``sources`` (files or directories; default the
    agents' standard locations), the index in ``index_dir`` (default
    :func:`default_index_dir`), and the config keys as keyword arguments (``None`` keeps the
    default). Relative paths are taken from the current directory (``.`` and ``..`` resolved,
    a ``..`` after a symbolic link from the link's target), so hits name their files by
    absolute path. Safe to share between threads."""

    def __init__(
        self,
        sources: Union[PathLike, Sequence[PathLike], None] = None,
        index_dir: Optional[PathLike] = None,
        *,
        max_sessions: Optional[int] = None,
        max_entry_chars: Optional[int] = None,
        index_thinking: Optional[bool] = None,
        index_tool_output: Optional[bool] = None,
        hot_sessions: Optional[int] = None,
        max_cold_vocabulary_bytes: Optional[int] = None,
        max_cold_cache_bytes: Optional[int] = None,
        max_sync_sessions: Optional[int] = None,
        max_sync_source_bytes: Optional[int] = None,
        max_cache_cleanup_files: Optional[int] = None,
        regex_max_pattern_bytes: Optional[int] = None,
        regex_max_automaton_bytes: Optional[int] = None,
        regex_max_haystack_bytes: Optional[int] = None,
        redact_secrets: Optional[bool] = None,
    ) -> None:
        if isinstance(sources, (str, os.PathLike)):
            sources = [sources]
        paths = None if sources is None else [os.fspath(s) for s in sources]
        config = _wire(
            max_sessions=max_sessions,
            max_entry_chars=max_entry_chars,
            index_thinking=index_thinking,
            index_tool_output=index_tool_output,
            hot_sessions=hot_sessions,
            max_cold_vocabulary_bytes=max_cold_vocabulary_bytes,
            max_cold_cache_bytes=max_cold_cache_bytes,
            max_sync_sessions=max_sync_sessions,
            max_sync_source_bytes=max_sync_source_bytes,
            max_cache_cleanup_files=max_cache_cleanup_files,
            regex_max_pattern_bytes=regex_max_pattern_bytes,
            regex_max_automaton_bytes=regex_max_automaton_bytes,
            regex_max_haystack_bytes=regex_max_haystack_bytes,
            redact_secrets=redact_secrets,
        )
        index = None if index_dir is None else os.fspath(index_dir)
        self._native = _sessiondex.NativeMemory(paths, index, config)

    @property
    def config(self) -> Dict[str, Any]:
        """Every config key (snake_case) and its value."""
        return {_snake(k): v for k, v in self._native.config().items()}

    @property
    def sources(self) -> List[str]:
        """The sources, absolute."""
        return [str(p) for p in self._native.sources()]

    @property
    def index_dir(self) -> str:
        """The index directory."""
        return str(self._native.index_dir())

    def to_dict(self) -> Dict[str, Any]:
        """``{"sources", "index_dir", "config"}``."""
        return {"sources": self.sources, "index_dir": self.index_dir, "config": self.config}

    def __repr__(self) -> str:
        return f"Memory(sources={self.sources!r}, index_dir={self.index_dir!r})"

    def sync(
        self,
        progress: Union[None, bool, Callable[[int, int], Any]] = None,
        *,
        branches: str = "active",
    ) -> SyncReport:
        """Brings the index up to date with the sources, within the budgets.
        ``progress=True`` shows a tqdm bar when tqdm is installed; a callable receives
        ``(done, total)`` session files."""
        callback, bar = _progress(progress)
        try:
            return SyncReport(self._native.sync(branches, callback))
        finally:
            if bar is not None:
                bar.close()

    def recall(
        self,
        query: Optional[str] = None,
        *,
        mode: str = "literal",
        match: str = "any",
        scope: Optional[str] = None,
        cwd: Optional[PathLike] = None,
        branches: str = "active",
        role: Optional[str] = None,
        tool: Optional[str] = None,
        ref: Optional[str] = None,
        provider: Optional[str] = None,
        action: Optional[str] = None,
        outcome: Optional[str] = None,
        since: Optional[TimeLike] = None,
        until: Optional[TimeLike] = None,
        entry_range: Optional[Tuple[int, int]] = None,
        page_size: Optional[int] = None,
        in_: Union[str, Sequence[str], None] = None,
        **extra: Any,
    ) -> RecallPage:
        """One ranked page of entries and session candidates (syncs first). ``scope`` is
        ``session``, ``project`` (the default, resolved against ``cwd`` or the process's
        working directory), ``global`` or ``session:<id-or-path>``; ``since``/``until``
        take datetimes (naive means UTC), dates or strings. ``in_`` (or ``**{"in": ...}``,
        since ``in`` is a Python keyword) names the field groups the query may match:
        ``text``, ``thinking``, ``tool_input``, ``tool_output`` (a list, or one name)."""
        unknown = sorted(k for k in extra if k != "in")
        if unknown:
            raise TypeError(f"recall() got an unexpected keyword argument {unknown[0]!r}")
        if "in" in extra:
            if in_ is not None:
                raise TypeError("recall() got both in_ and in")
            in_ = extra["in"]
        request = _wire(
            query=query,
            queryMode=mode,
            queryMatch=match,
            scope=scope,
            cwd=_dir(cwd),
            branches=branches,
            role=role,
            tool=tool,
            ref=ref,
            provider=provider,
            action=action,
            outcome=outcome,
            since=_time(since),
            until=_time(until),
            entryRange=None if entry_range is None else list(entry_range),
            pageSize=page_size,
        )
        if in_ is not None:
            request["in"] = [in_] if isinstance(in_, str) else list(in_)
        return RecallPage(self._native.recall(request))

    def expand(
        self,
        session: PathLike,
        indices: Union[int, Sequence[int], None] = None,
        entry_ids: Union[str, Sequence[str], None] = None,
        addresses: Union[str, Sequence[str], None] = None,
        range: Optional[Tuple[int, int]] = None,
        before: int = 0,
        after: int = 0,
        max_chars: Optional[int] = None,
        *,
        branches: Optional[str] = None,
        source_hash: Optional[str] = None,
        lineage_fingerprint: Optional[str] = None,
        reveal: bool = False,
    ) -> ExpandResult:
        """Complete records of one session (id or path), re-read from source: give exactly
        one of ``indices``, ``entry_ids``, ``addresses`` or ``range`` (inclusive);
        ``before``/``after`` add context around one anchor. ``reveal=True`` shows
        credentials as the source has them instead of ``[redacted:<kind>]``."""
        request = _wire(
            session=_path(session),
            indices=_many(indices),
            entryIds=_many(entry_ids),
            addresses=_many(addresses),
            range=None if range is None else list(range),
            before=before or None,
            after=after or None,
            maxChars=max_chars,
            branches=branches,
            sourceHash=source_hash,
            lineageFingerprint=lineage_fingerprint,
            reveal=True if reveal else None,
        )
        return ExpandResult(self._native.expand(request))

    def call(self, call: Union[Call, Mapping[str, Any]]) -> Union[RecallPage, ExpandResult]:
        """Runs a hit's ``follow`` or a page's ``next`` unchanged (or its dict form)."""
        wire = call.to_dict() if isinstance(call, Call) else call
        kind, result = self._native.call(wire)
        return RecallPage(result) if kind == "recall" else ExpandResult(result)

    def walk(
        self,
        session: Optional[PathLike] = None,
        branches: str = "active",
        range: Optional[Tuple[int, int]] = None,
        *,
        source_hash: Optional[str] = None,
        lineage_fingerprint: Optional[str] = None,
        reveal: bool = False,
    ) -> Walk:
        """Every record of one session (id or path; ``range`` inclusive), or with no
        ``session`` of every session file under the sources, file by file. ``reveal=True``
        shows credentials as the sources have them instead of ``[redacted:<kind>]``."""
        native = self._native.walk(
            _path(session),
            branches,
            None if range is None else list(range),
            source_hash,
            lineage_fingerprint,
            reveal,
        )
        return Walk(native)

    def sessions(
        self,
        *,
        id: Optional[str] = None,
        cwd: Optional[PathLike] = None,
        created_since: Optional[TimeLike] = None,
        created_until: Optional[TimeLike] = None,
        parent: Optional[str] = None,
        availability: Optional[str] = None,
        limit: Optional[int] = None,
        branches: str = "active",
    ) -> SessionList:
        """The indexed sessions passing every filter, newest first (syncs first)."""
        request = _wire(
            id=_path(id),
            cwd=_dir(cwd),
            createdSince=_time(created_since),
            createdUntil=_time(created_until),
            parent=parent,
            availability=availability,
            limit=limit,
        )
        return SessionList(self._native.sessions(request, branches))

    def trace(self, session: PathLike, *, branches: str = "active") -> Trace:
        """A session's lineage across files (syncs first)."""
        return Trace(self._native.trace(os.fspath(session), branches))


def default_sources() -> List[str]:
    """The agents' standard session locations that exist on this machine."""
    return [str(p) for p in _sessiondex.default_sources()]


def default_index_dir() -> str:
    """``$XDG_CACHE_HOME/sessiondex`` (when absolute), else ``~/.cache/sessiondex``
    (``~/Library/Caches/sessiondex`` on macOS)."""
    return str(_sessiondex.default_index_dir())


def default_config() -> Dict[str, Any]:
    """Every config key (snake_case) with its default."""
    return {_snake(k): v for k, v in _sessiondex.default_config().items()}


def tokenize(text: str) -> List[str]:
    """The canonical terms of a text, as the index and literal queries see them."""
    return list(_sessiondex.tokenize(text))
