"""Where SGLang 0.5.23's oracle is (``../shared/oracle``, a test tool the project never imports at run time).

Which Python: ``$SGLANG_ORACLE_PYTHON`` if set (then it must work: CI sets it, so a broken oracle
venv fails there instead of skipping), else ``.oracle-venv/bin/python`` beside the checkout
(``../.oracle-venv``), else the tests that need it are skipped.  The oracle itself is
``$SGLANG_ORACLE_DIR``, else ``../shared/oracle``.  It writes /tmp/sglang-oracle-fixture: the tests
that run it must not run at the same time.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from .conftest import ROOT

ORACLE = os.environ.get("SGLANG_ORACLE_DIR") or os.path.join(os.path.dirname(ROOT), "shared", "oracle")
# import names of sglang and the resolver's dependencies
NEEDS = ("sglang", "durable", "yaml", "jsonschema", "elftools")


def oracle_python() -> str:
    """The oracle's Python, or a skip (a failure when ``$SGLANG_ORACLE_PYTHON`` is set)."""
    explicit = os.environ.get("SGLANG_ORACLE_PYTHON")
    python = explicit or os.path.join(os.path.dirname(ROOT), ".oracle-venv", "bin", "python")
    probe = f"import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in {NEEDS!r}))"
    usable = (os.path.isfile(python) and os.path.isdir(ORACLE)
              and subprocess.run([python, "-c", probe], check=False, timeout=60).returncode == 0)
    if not usable:
        why = (f"the SGLang oracle is not usable: {python} (with {', '.join(NEEDS)}) and {ORACLE} are needed; "
               "build the venv as the oracle's README says, plus "
               "'pip install durable-rules==2.0.28 pyyaml jsonschema pyelftools'")
        if explicit:
            pytest.fail(f"SGLANG_ORACLE_PYTHON is set but {why}")
        pytest.skip(why)
    return python
