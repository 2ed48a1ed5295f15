"""resolve lint's sweep on a broken pack: each finds what the static checks cannot, at file:line.

Apart from tests/test_lint.py (whose restricted sweep of the shipped rules is as long): the test command
spreads test files over its workers, so the two long sweeps run side by side.
"""
import os

import pytest

from .test_lint import FIXTURES, SWEEP, _expectation, _lint, _pack

#: sweeps of whole rule packs, about a minute: slow (the README's test command skips it; CI runs it, .ci/run)
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", SWEEP)
def test_the_sweep_finds_what_the_static_checks_cannot(tmp_path, name):
    check, line = _expectation(os.path.join(FIXTURES, "sweep", name))
    rules = _pack(tmp_path, os.path.join(FIXTURES, "sweep", name), full=True)
    code, out, _ = _lint("--rules", rules, "--sweep-platform", "h100", "--sweep-model-kind", "mha", "--jobs", "1")
    assert code == 1
    assert f"{name}:{line}: error: [{check}]" in out.replace(rules + os.sep, ""), out
    assert "e.g. mha model on sm90" in out
