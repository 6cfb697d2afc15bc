"""The README's Python examples run as written (in order, in one namespace, in a temporary
folder), so the documentation cannot drift from the package."""

import os
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def _python_section_blocks():
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Python\n")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


def test_the_readme_has_python_examples():
    assert len(_python_section_blocks()) >= 3


def test_the_readme_python_examples_run(tmp_path, capsys):
    pytest.importorskip("optuna")
    pytest.importorskip("optuna_dashboard")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        ns = {}
        for block in _python_section_blocks():
            exec(compile(block, str(README), "exec"), ns)
    finally:
        os.chdir(cwd)
    assert (tmp_path / "studies.db").is_file()
    import agora

    assert agora.study_names(storage=str(tmp_path / "studies.db")) == ["mugs"]
    assert ns["csv"].count("\n") >= 3  # header, asked, answered, asked
    assert len(ns["study"].trials) == 30  # the Optuna study of the last example
