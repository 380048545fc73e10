"""The .pyi stubs match the module: every name, every class member, every signature."""

import ast
import inspect
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

import pytest

import sessiondex
from sessiondex import _sessiondex

PKG = Path(sessiondex.__file__).parent


def _stub(name: str) -> ast.Module:
    return ast.parse((PKG / name).read_text(encoding="utf-8"))


def _top_names(tree: ast.Module) -> Set[str]:
    out: Set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            out.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 1:
            out.update(a.asname for a in node.names if a.asname)
    return out


def _literal(node: Optional[ast.expr]) -> Any:
    if node is None:
        return inspect.Parameter.empty
    if isinstance(node, ast.Constant) and node.value is ...:
        return ...
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ...


def _stub_params(fn: ast.FunctionDef) -> List[Any]:
    a = fn.args
    out = []
    positional = a.posonlyargs + a.args
    defaults: List[Optional[ast.expr]] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for p, d in zip(positional, defaults):
        out.append((p.arg, "positional", _literal(d)))
    if a.vararg:
        out.append((a.vararg.arg, "var_positional", inspect.Parameter.empty))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, "keyword", _literal(d)))
    if a.kwarg:
        out.append((a.kwarg.arg, "var_keyword", inspect.Parameter.empty))
    return out


def _runtime_params(obj: Any) -> List[Any]:
    kinds = {
        inspect.Parameter.POSITIONAL_ONLY: "positional",
        inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
        inspect.Parameter.VAR_POSITIONAL: "var_positional",
        inspect.Parameter.KEYWORD_ONLY: "keyword",
        inspect.Parameter.VAR_KEYWORD: "var_keyword",
    }
    return [(p.name, kinds[p.kind], p.default) for p in inspect.signature(obj).parameters.values()]


def _same_signature(stub: ast.FunctionDef, runtime: Any, where: str) -> None:
    got = _runtime_params(runtime)
    want = _stub_params(stub)
    assert [(n, k) for n, k, _ in got] == [(n, k) for n, k, _ in want], where
    for (n, _, d_run), (_, _, d_stub) in zip(got, want):
        if d_stub is not ...:
            assert d_run == d_stub, f"{where}: default of {n}"


def test_every_public_name_is_stubbed_and_importable() -> None:
    names = _top_names(_stub("__init__.pyi")) - {"PathLike", "TimeLike", "__all__"}
    assert set(sessiondex.__all__) == names
    for n in names:
        assert hasattr(sessiondex, n), n
    # `from sessiondex import *` works.
    ns: Dict[str, Any] = {}
    exec("from sessiondex import *", ns)
    assert set(sessiondex.__all__) <= set(ns)


def _classes(tree: ast.Module) -> Dict[str, ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def test_classes_match() -> None:
    tree = _stub("__init__.pyi")
    for name, cls in _classes(tree).items():
        runtime = getattr(sessiondex, name)
        attrs = set()
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                attrs.add(node.target.id)
            elif isinstance(node, ast.FunctionDef):
                assert hasattr(runtime, node.name), f"{name}.{node.name}"
                member = inspect.getattr_static(runtime, node.name)
                if isinstance(member, property):
                    continue
                if node.name == "__init__" and name in ("Call",):
                    continue
                _same_signature(node, getattr(runtime, node.name), f"{name}.{node.name}")
        fields = getattr(runtime, "_fields", None)
        if fields is not None and name not in ("Call",):
            inherited = set()
            for base in cls.bases:
                if isinstance(base, ast.Name) and base.id in _classes(tree):
                    inherited = {
                        n.target.id
                        for n in _classes(tree)[base.id].body
                        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                    }
            assert attrs | inherited == {a for a, _, _ in fields}, name
        # Each runtime public method is in the stub (or inherited from a stubbed base).
        stubbed = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)} | attrs
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in _classes(tree):
                stubbed |= {n.name for n in _classes(tree)[base.id].body if isinstance(n, ast.FunctionDef)}
        if issubclass(runtime, BaseException):
            continue
        own = {
            n
            for n, v in vars(runtime).items()
            if not n.startswith("_") and (callable(v) or isinstance(v, property))
        }
        assert own <= stubbed, f"{name}: {own - stubbed} not in the stub"


def test_functions_match() -> None:
    for node in _stub("__init__.pyi").body:
        if isinstance(node, ast.FunctionDef):
            _same_signature(node, getattr(sessiondex, node.name), node.name)


def test_native_stub_matches() -> None:
    tree = _stub("_sessiondex.pyi")
    names = _top_names(tree)
    public = {n for n in dir(_sessiondex) if not n.startswith("_")} | {"__version__"}
    assert names == public
    for name, cls in _classes(tree).items():
        runtime = getattr(_sessiondex, name)
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name != "__init__":
                _same_signature(node, getattr(runtime, node.name), f"{name}.{node.name}")
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            _same_signature(node, getattr(_sessiondex, node.name), node.name)


def test_py_typed_is_shipped() -> None:
    assert (PKG / "py.typed").exists()
    assert (PKG / "__init__.pyi").exists()


@pytest.mark.parametrize("name", sorted(sessiondex.__all__))
def test_every_public_object_is_documented(name: str) -> None:
    obj = getattr(sessiondex, name)
    if isinstance(obj, str):
        return
    assert inspect.getdoc(obj), name
