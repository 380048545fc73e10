//! `sessiondex._sessiondex`: the private native module behind the `sessiondex` Python package.
//!
//! It converts and nothing more: requests arrive as dicts in the wire form (the camelCase JSON
//! of `docs/query.md`), go through the facade's own `from_json` parsers (so every malformed
//! request gets its stable error code), run with the GIL released, and come back as plain
//! Python objects serialized from the Rust results. `python/sessiondex/__init__.py` wraps
//! them in small classes; errors become the exception class of their code, built by
//! `sessiondex._errors`.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use pythonize::{depythonize, pythonize};
use serde::Serialize;
use serde_json::Value;
use sessiondex::query::SessionsRequest;
use sessiondex::source::{self, Branches, Record};
use sessiondex::{Call, WalkRequest};
use sessiondex::{
    CallResult, Config, Error, ErrorCode, ExpandRequest, Memory, RecallRequest, Walk,
};

/// Records handed to Python per walk batch: large enough that the GIL round trip is noise,
/// small enough that the first record arrives at once.
const WALK_BATCH: usize = 1024;

/// The Python exception of a sessiondex error: `sessiondex._errors._from_native` picks the
/// subclass of the code and keeps the details.
fn py_err(py: Python<'_>, e: &Error) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let details = match &e.details {
            Some(d) => pythonize(py, d)?,
            None => py.None().into_bound(py),
        };
        let exc = py
            .import("sessiondex._errors")?
            .getattr("_from_native")?
            .call1((e.code_str(), e.message.as_str(), details))?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|failed| failed)
}

fn invalid(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::new(code, message)
}

/// A Python value in the wire form, as JSON.
fn to_json(obj: &Bound<'_, PyAny>) -> Result<Value, Error> {
    depythonize(obj)
        .map_err(|e| invalid(ErrorCode::InvalidRequest, format!("invalid request: {e}")))
}

fn branches(s: &str) -> Result<Branches, Error> {
    Branches::parse(s).ok_or_else(|| {
        invalid(
            ErrorCode::InvalidRequest,
            format!("`branches` is `active` or `all`, not `{s}`"),
        )
    })
}

fn to_py<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize(py, value)?)
}

/// A memory of past sessions; safe to share between threads (every method takes `&self`
/// and runs with the GIL released).
#[pyclass(frozen, module = "sessiondex._sessiondex")]
struct NativeMemory {
    memory: Memory,
}

#[pymethods]
impl NativeMemory {
    /// `config` holds config keys (snake_case or camelCase) and their values.
    #[new]
    #[pyo3(signature = (sources=None, index_dir=None, config=None))]
    fn new(
        py: Python<'_>,
        sources: Option<Vec<PathBuf>>,
        index_dir: Option<PathBuf>,
        config: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let config: Config = match config {
            None => Config::default(),
            Some(c) => depythonize(c).map_err(|e| {
                py_err(
                    py,
                    &invalid(ErrorCode::InvalidConfig, format!("invalid config: {e}")),
                )
            })?,
        };
        let memory = py
            .detach(|| Memory::open(config, sources, index_dir))
            .map_err(|e| py_err(py, &e))?;
        Ok(NativeMemory { memory })
    }

    /// The configuration in its camelCase form.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, self.memory.config())
    }

    /// The sources.
    fn sources(&self) -> Vec<PathBuf> {
        self.memory.sources().to_vec()
    }

    /// The index directory.
    fn index_dir(&self) -> PathBuf {
        self.memory.index_dir().to_path_buf()
    }

    /// Syncs one branch mode; `progress(done, total)` is called with the GIL taken back for
    /// the call. An exception raised by `progress` is raised after the sync.
    #[pyo3(signature = (branches="active", progress=None))]
    fn sync<'py>(
        &self,
        py: Python<'py>,
        branches: &str,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let b = self::branches(branches).map_err(|e| py_err(py, &e))?;
        let mut failure: Option<PyErr> = None;
        let report = py.detach(|| {
            let mut report_progress = |done: u64, total: u64| {
                if let (Some(f), None) = (&progress, &failure) {
                    Python::attach(|py| {
                        if let Err(e) = f.call1(py, (done, total)) {
                            failure = Some(e);
                        }
                    });
                }
            };
            self.memory.sync(b, &mut report_progress)
        });
        let report = report.map_err(|e| py_err(py, &e))?;
        if let Some(e) = failure {
            return Err(e);
        }
        to_py(py, &report)
    }

    /// Runs a recall request (wire form) in the context of this process.
    fn recall<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let page = to_json(request)
            .and_then(|v| RecallRequest::from_json(&v))
            .and_then(|req| py.detach(|| self.memory.recall(&req)))
            .map_err(|e| py_err(py, &e))?;
        to_py(py, &page)
    }

    /// Runs an expand request (wire form).
    fn expand<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let x = to_json(request)
            .and_then(|v| ExpandRequest::from_json(&v))
            .and_then(|req| py.detach(|| self.memory.expand(&req)))
            .map_err(|e| py_err(py, &e))?;
        to_py(py, &x)
    }

    /// Runs a `follow`/`next` call (wire form); returns `("recall" | "expand", result)`.
    fn call<'py>(
        &self,
        py: Python<'py>,
        call: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let result = to_json(call)
            .map_err(|e| invalid(ErrorCode::InvalidCall, e.message))
            .and_then(|v| Call::from_json(&v))
            .and_then(|c| py.detach(|| self.memory.call(&c)))
            .map_err(|e| py_err(py, &e))?;
        let (kind, value) = match &result {
            CallResult::Recall(p) => ("recall", to_py(py, p)?),
            CallResult::Expand(x) => ("expand", to_py(py, x)?),
        };
        PyTuple::new(py, [kind.into_pyobject(py)?.into_any(), value])
    }

    /// Lists sessions: a `sessions` request (wire form) over one branch mode.
    #[pyo3(signature = (request, branches="active"))]
    fn sessions<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
        branches: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let page = to_json(request)
            .and_then(|v| {
                serde_json::from_value::<SessionsRequest>(v).map_err(|e| {
                    invalid(ErrorCode::InvalidRequest, format!("invalid request: {e}"))
                })
            })
            .and_then(|req| {
                let b = self::branches(branches)?;
                py.detach(|| self.memory.sessions_filtered(&req, b))
            })
            .map_err(|e| py_err(py, &e))?;
        to_py(py, &page)
    }

    /// Traces a session's lineage.
    #[pyo3(signature = (session, branches="active"))]
    fn trace<'py>(
        &self,
        py: Python<'py>,
        session: &str,
        branches: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let t = self::branches(branches)
            .and_then(|b| py.detach(|| self.memory.trace(session, b)))
            .map_err(|e| py_err(py, &e))?;
        to_py(py, &t)
    }

    /// A walk over one session (read at once, so its errors raise here), or over every
    /// session file under the sources (read one by one as the walk reaches them).
    #[pyo3(signature = (session=None, branches="active", range=None, source_hash=None, lineage_fingerprint=None, reveal=false))]
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        py: Python<'_>,
        session: Option<String>,
        branches: &str,
        range: Option<[i64; 2]>,
        source_hash: Option<String>,
        lineage_fingerprint: Option<String>,
        reveal: bool,
    ) -> PyResult<NativeWalk> {
        let b = self::branches(branches).map_err(|e| py_err(py, &e))?;
        let mut state = WalkState {
            memory: self.memory.clone(),
            branches: b,
            reveal,
            pending: VecDeque::new(),
            current: None,
            skipped: Vec::new(),
        };
        match session {
            Some(session) => {
                let req = WalkRequest {
                    session,
                    branches: Some(b),
                    range,
                    source_hash,
                    lineage_fingerprint,
                    reveal,
                };
                let walk = py
                    .detach(|| self.memory.walk(&req))
                    .map_err(|e| py_err(py, &e))?;
                state.current = Some(walk);
            }
            None => {
                if range.is_some() || source_hash.is_some() || lineage_fingerprint.is_some() {
                    let e = invalid(
                        ErrorCode::InvalidRequest,
                        "`range`, `source_hash` and `lineage_fingerprint` need a `session`",
                    );
                    return Err(py_err(py, &e));
                }
                state.pending = py.detach(|| {
                    self.memory
                        .sources()
                        .iter()
                        .flat_map(|s| source::discover(s))
                        .collect()
                });
            }
        }
        Ok(NativeWalk {
            state: Mutex::new(state),
        })
    }
}

struct WalkState {
    memory: Memory,
    branches: Branches,
    /// Credentials as the sources have them, not `[redacted:<kind>]`.
    reveal: bool,
    /// Session files not reached yet (a walk over the sources).
    pending: VecDeque<PathBuf>,
    /// The session being read.
    current: Option<Walk>,
    /// Files of the sources that could not be walked: `(file, error)`.
    skipped: Vec<(String, Error)>,
}

/// One batch of a walk: the session the records belong to, with its coverage, and records.
struct Batch {
    session: Value,
    coverage: Value,
    records: Vec<Record>,
}

impl WalkState {
    /// The next batch of records, reading the next session file when the current one is done;
    /// `None` at the end.
    fn next_batch(&mut self) -> Result<Option<Batch>, Error> {
        loop {
            if let Some(walk) = &mut self.current {
                let records: Vec<Record> = walk.by_ref().take(WALK_BATCH).collect();
                if !records.is_empty() {
                    let json = |v: serde_json::Result<Value>| {
                        v.map_err(|e| invalid(ErrorCode::InvalidRequest, e.to_string()))
                    };
                    return Ok(Some(Batch {
                        session: json(serde_json::to_value(&walk.session))?,
                        coverage: json(serde_json::to_value(&walk.coverage))?,
                        records,
                    }));
                }
                self.current = None;
            }
            let Some(path) = self.pending.pop_front() else {
                return Ok(None);
            };
            let file = path.to_string_lossy().into_owned();
            let req = WalkRequest {
                session: file.clone(),
                branches: Some(self.branches),
                reveal: self.reveal,
                ..WalkRequest::default()
            };
            match self.memory.walk(&req) {
                Ok(w) => self.current = Some(w),
                // A file of the sources that is not a readable session is skipped and kept
                // for `Walk.skipped`, as `sessiondex walk` reports it and goes on.
                Err(e) => self.skipped.push((file, e)),
            }
        }
    }
}

/// The native side of `sessiondex.Walk`: batches of records as dicts (wire form, with
/// `sessionId` and `file` added as `sessiondex walk --json` prints them).
#[pyclass(frozen, module = "sessiondex._sessiondex")]
struct NativeWalk {
    state: Mutex<WalkState>,
}

#[pymethods]
impl NativeWalk {
    /// `(session, coverage, [record, ...])` of the next batch, or `None` at the end. The
    /// reading happens with the GIL released.
    fn next_batch<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let batch = py
            .detach(|| {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                state.next_batch()
            })
            .map_err(|e| py_err(py, &e))?;
        let Some(batch) = batch else {
            return Ok(None);
        };
        let session = to_py(py, &batch.session)?;
        let session_id = session.get_item("sessionId")?;
        let file = session.get_item("file")?;
        let records = PyList::empty(py);
        for r in &batch.records {
            let d = to_py(py, r)?;
            let d = d
                .cast_into::<PyDict>()
                .map_err(|_| PyRuntimeError::new_err("a record did not serialize as an object"))?;
            d.set_item("sessionId", &session_id)?;
            d.set_item("file", &file)?;
            records.append(d)?;
        }
        let coverage = to_py(py, &batch.coverage)?;
        Ok(Some(PyTuple::new(
            py,
            [session, coverage, records.into_any()],
        )?))
    }

    /// Files of the sources skipped so far: `[(file, code, message), ...]`.
    fn skipped(&self, py: Python<'_>) -> PyResult<Vec<(String, String, String)>> {
        let skipped = py.detach(|| {
            self.state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .skipped
                .clone()
        });
        Ok(skipped
            .into_iter()
            .map(|(f, e)| (f, e.code_str().to_owned(), e.message))
            .collect())
    }
}

/// The stable code strings of every error, in declaration order.
#[pyfunction]
fn error_codes() -> Vec<&'static str> {
    ErrorCode::ALL.iter().map(|c| c.code()).collect()
}

/// The default sources that exist on this machine.
#[pyfunction]
fn default_sources() -> Vec<PathBuf> {
    sessiondex::default_sources()
}

/// The default index directory.
#[pyfunction]
fn default_index_dir() -> PathBuf {
    sessiondex::default_index_dir()
}

/// `path` made absolute as a memory names its files ([`sessiondex::absolute_path`]); as given
/// when the current directory cannot be read.
#[pyfunction]
fn absolute_path(path: PathBuf) -> PathBuf {
    sessiondex::absolute_path(&path).unwrap_or(path)
}

/// The default configuration (camelCase keys).
#[pyfunction]
fn default_config(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    to_py(py, &Config::default())
}

/// The canonical tokenizer: the terms a text is indexed and searched by.
#[pyfunction]
fn tokenize(text: &str) -> Vec<String> {
    sessiondex::tokenize(text)
}

#[pymodule]
fn _sessiondex(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeMemory>()?;
    m.add_class::<NativeWalk>()?;
    m.add_function(wrap_pyfunction!(error_codes, m)?)?;
    m.add_function(wrap_pyfunction!(default_sources, m)?)?;
    m.add_function(wrap_pyfunction!(default_index_dir, m)?)?;
    m.add_function(wrap_pyfunction!(absolute_path, m)?)?;
    m.add_function(wrap_pyfunction!(default_config, m)?)?;
    m.add_function(wrap_pyfunction!(tokenize, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
