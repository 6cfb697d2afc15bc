"""python/agora/_agora.pyi describes the extension module as it is: every name, member,
parameter and docstring (the docstrings are the Rust doc comments)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import agora
from agora import _agora

STUB_PATH = Path(agora.__file__).with_name("_agora.pyi")
TREE = ast.parse(STUB_PATH.read_text())


def stub_defs(body: list[ast.stmt]) -> dict[str, ast.FunctionDef | ast.ClassDef]:
    """Top-level functions and classes (the first of a function's overloads)."""
    out: dict[str, ast.FunctionDef | ast.ClassDef] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.setdefault(node.name, node)
    return out


STUBS = stub_defs(TREE.body)
PUBLIC = sorted(n for n in dir(_agora) if not n.startswith("_"))


def members(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n: d for n, d in stub_defs(cls.body).items() if isinstance(d, ast.FunctionDef)}


def test_py_typed_ships():
    assert STUB_PATH.with_name("py.typed").is_file()


def test_every_name_has_a_stub():
    stubbed = {n for n in STUBS if not n.startswith("_")}
    assert stubbed == set(PUBLIC)
    assert any(
        isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "__version__" for n in TREE.body
    )


def doc(text: str | None) -> str:
    return inspect.cleandoc(text or "")


CLASSES = [n for n in PUBLIC if isinstance(getattr(_agora, n), type)]
FUNCTIONS = [n for n in PUBLIC if n not in CLASSES]


@pytest.mark.parametrize("name", CLASSES)
def test_class_members_and_docs(name):
    cls = getattr(_agora, name)
    stub = STUBS[name]
    assert isinstance(stub, ast.ClassDef)
    assert doc(ast.get_docstring(stub)) == doc(cls.__doc__)
    defs = members(stub)
    runtime = {n for n in dir(cls) if not n.startswith("_")}
    assert {n for n in defs if not n.startswith("_")} == runtime
    for n in runtime:
        assert doc(ast.get_docstring(defs[n])) == doc(getattr(cls, n).__doc__), f"{name}.{n}"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_docs(name):
    assert doc(ast.get_docstring(STUBS[name])) == doc(getattr(_agora, name).__doc__)


def callables():
    for name in FUNCTIONS:
        yield name, getattr(_agora, name), STUBS[name]
    for name in CLASSES:
        cls, defs = getattr(_agora, name), members(STUBS[name])
        for n, d in defs.items():
            target = cls if n == "__init__" else getattr(cls, n, None)
            if target is not None and (n == "__init__" or not n.startswith("_")) and callable(target):
                yield f"{name}.{n}", target, d


CALLABLES = list(callables())


@pytest.mark.parametrize("name, obj, stub", CALLABLES, ids=[c[0] for c in CALLABLES])
def test_signatures(name, obj, stub):
    """The stub's parameters are the runtime's (names, kinds, defaults); where the runtime
    takes **kwargs the stub may spell them out as keywords."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        pytest.skip(f"{name} has no runtime signature")
    runtime = [p for p in sig.parameters.values() if p.name != "self"]
    a = stub.args
    positional = [x.arg for x in a.posonlyargs + a.args if x.arg not in ("self", "cls")]
    keyword = [x.arg for x in a.kwonlyargs]
    defaults = dict(zip(reversed([x.arg for x in a.posonlyargs + a.args]), reversed(a.defaults)))
    defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    for p in runtime:
        if p.kind is p.VAR_KEYWORD:
            if p.name == "knobs":
                assert a.kwarg is not None and a.kwarg.arg == "knobs", name
            continue
        if p.kind is p.KEYWORD_ONLY:
            assert p.name in keyword, f"{name}: `{p.name}` should be keyword-only"
        else:
            assert p.name in positional, f"{name}: `{p.name}` should be positional"
        if p.default is not p.empty:
            assert p.name in defaults, f"{name}: `{p.name}` has a default"
            assert ast.literal_eval(defaults[p.name]) == p.default, name
        else:
            assert p.name not in defaults, f"{name}: `{p.name}` is required"
    assert positional == [p.name for p in runtime if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
