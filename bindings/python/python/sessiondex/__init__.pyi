import os
from datetime import date, datetime
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import pandas
import pyarrow

from ._errors import (
    AddressNotFoundError as AddressNotFoundError,
    AmbiguousAddressError as AmbiguousAddressError,
    AmbiguousSessionError as AmbiguousSessionError,
    IndexCorruptError as IndexCorruptError,
    IndexOutOfBoundsError as IndexOutOfBoundsError,
    IndexUnavailableError as IndexUnavailableError,
    InvalidCallError as InvalidCallError,
    InvalidConfigError as InvalidConfigError,
    InvalidQueryModeError as InvalidQueryModeError,
    InvalidRegexError as InvalidRegexError,
    InvalidRequestError as InvalidRequestError,
    InvalidScopeError as InvalidScopeError,
    InvalidTimeError as InvalidTimeError,
    RegexPatternTooLongError as RegexPatternTooLongError,
    RegexTooLargeError as RegexTooLargeError,
    SessionDexError as SessionDexError,
    SessionNotFoundError as SessionNotFoundError,
    SourceUnreadableError as SourceUnreadableError,
    StalePointerError as StalePointerError,
    UnknownFormatError as UnknownFormatError,
)

__version__: str
__all__: List[str]

PathLike = Union[str, os.PathLike[str]]
TimeLike = Union[str, datetime, date]

class ReasonCount:
    code: str
    count: int
    def to_dict(self) -> Dict[str, Any]: ...

class IndexCoverage:
    complete: bool
    indexed_sessions: int
    eligible_sessions: int
    stale_sessions: int
    incomplete_sessions: int
    reasons: List[ReasonCount]
    def to_dict(self) -> Dict[str, Any]: ...

class SyncReport:
    indexed: int
    reused: int
    removed: int
    failed: int
    bytes_read: int
    bytes_parsed: int
    appended: int
    coverage: IndexCoverage
    def to_dict(self) -> Dict[str, Any]: ...

class Coverage:
    complete: bool
    indexed_sessions: int
    eligible_sessions: int
    stale_sessions: int
    incomplete_sessions: int
    reasons: List[str]
    error: Optional[Dict[str, Any]]
    def to_dict(self) -> Dict[str, Any]: ...

class Call:
    ref: str
    args: Dict[str, Any]
    def __init__(self, data: Mapping[str, Any]) -> None: ...
    def to_dict(self) -> Dict[str, Any]: ...

class Snippet:
    text: str
    truncated: bool
    highlights: List[Tuple[int, int]]
    def to_dict(self) -> Dict[str, Any]: ...

class StructuralEntry:
    index: int
    entry_id: Optional[str]
    operation_address: Optional[str]
    def to_dict(self) -> Dict[str, Any]: ...

class Hit:
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
    matched_in: List[str]
    matched_structural_entries: List[StructuralEntry]
    follow: Call
    def to_dict(self) -> Dict[str, Any]: ...

class RecallPage:
    total: int
    hits: List[Hit]
    next: Optional[Call]
    coverage: Coverage
    error: Optional[Dict[str, Any]]
    def __iter__(self) -> Iterator[Hit]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> Hit: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def to_pandas(self) -> pandas.DataFrame: ...

class SessionRef:
    session_id: str
    file: str
    format: Optional[str]
    branches: str
    source_hash: str
    lineage_fingerprint: str
    entries: int
    def to_dict(self) -> Dict[str, Any]: ...

class Record:
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
    def to_dict(self) -> Dict[str, Any]: ...

class TextRange:
    start: int
    end: int
    total: int
    complete: bool
    def to_dict(self) -> Dict[str, Any]: ...

class ExpandedEntry(Record):
    text_range: TextRange

class ExpandResult:
    session: SessionRef
    entries: List[ExpandedEntry]
    next: Optional[Call]
    coverage: Coverage
    def __iter__(self) -> Iterator[ExpandedEntry]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> ExpandedEntry: ...
    def to_dict(self) -> Dict[str, Any]: ...

class Walk(Iterator[Record]):
    session: Optional[SessionRef]
    coverage: Optional[Coverage]
    def __iter__(self) -> Walk: ...
    def __next__(self) -> Record: ...
    @property
    def skipped(self) -> List[Dict[str, str]]: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def to_pandas(self) -> pandas.DataFrame: ...
    def to_arrow(self) -> pyarrow.Table: ...

class SessionLink:
    kind: str
    target: str
    def to_dict(self) -> Dict[str, Any]: ...

class Session:
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
    def to_dict(self) -> Dict[str, Any]: ...

class SessionList(List[Session]):
    total: int
    coverage: Coverage
    def to_dict(self) -> Dict[str, Any]: ...
    def to_pandas(self) -> pandas.DataFrame: ...

class TraceStep:
    link: SessionLink
    depth: int
    session: Session
    def to_dict(self) -> Dict[str, Any]: ...

class Trace:
    session: Session
    ancestors: List[TraceStep]
    root: Optional[Session]
    unresolved_parent: Optional[SessionLink]
    descendants: List[TraceStep]
    cycle: bool
    def to_dict(self) -> Dict[str, Any]: ...

class Memory:
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
    ) -> None: ...
    @property
    def config(self) -> Dict[str, Any]: ...
    @property
    def sources(self) -> List[str]: ...
    @property
    def index_dir(self) -> str: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def sync(
        self,
        progress: Union[None, bool, Callable[[int, int], Any]] = None,
        *,
        branches: str = "active",
    ) -> SyncReport: ...
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
    ) -> RecallPage: ...
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
    ) -> ExpandResult: ...
    def call(self, call: Union[Call, Mapping[str, Any]]) -> Union[RecallPage, ExpandResult]: ...
    def walk(
        self,
        session: Optional[PathLike] = None,
        branches: str = "active",
        range: Optional[Tuple[int, int]] = None,
        *,
        source_hash: Optional[str] = None,
        lineage_fingerprint: Optional[str] = None,
        reveal: bool = False,
    ) -> Walk: ...
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
    ) -> SessionList: ...
    def trace(self, session: PathLike, *, branches: str = "active") -> Trace: ...

def default_sources() -> List[str]: ...
def default_index_dir() -> str: ...
def default_config() -> Dict[str, Any]: ...
def tokenize(text: str) -> List[str]: ...
