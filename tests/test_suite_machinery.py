"""The suite's own machinery in conftest.py, where a silent failure costs every run time rather than a result."""
import sys
from pathlib import Path

from _pytest.assertion import rewrite

import conftest


def test_a_test_module_is_rewritten_into_the_cache_the_workers_read(tmp_path, pytestconfig, monkeypatch):
    """Before the xdist workers start, conftest rewrites the test modules' asserts into pytest's cache, once
    (each worker otherwise rewrote all of them itself, about 3 s of CPU each). It goes through pytest's private
    functions, and swallows their errors so that the workers still rewrite for themselves: a wrong use of them
    (_write_pyc's code and stat arguments were swapped, unseen since they were written) or a change in them
    fails here."""
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))
    source = Path(__file__)
    pyc = conftest.rewritten_pyc(source, pytestconfig)
    assert pyc.is_relative_to(tmp_path)
    assert rewrite._read_pyc(source, pyc) is not None
