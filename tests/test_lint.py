"""resolve lint: the shipped rules are clean; each broken pack fails with its check at file:line."""
import io
import json
import os
import shutil

import pytest

from resolver.cli import main
from resolver.loader import default_rules_dir
from resolver.tools.lint import CHECKS

from .conftest import ROOT

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "lint")
STATIC = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".yaml"))
SWEEP = sorted(os.listdir(os.path.join(FIXTURES, "sweep")))


def _lint(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(["lint", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def _expectation(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read().splitlines()
    check = text[0].removeprefix("# expect: ").strip()
    line = next(i for i, t in enumerate(text, 1) if "# <- here" in t)
    return check, line


def _pack(tmp_path, fixture, full):
    d = tmp_path / "rules"
    if full:
        shutil.copytree(default_rules_dir(), d)
    else:
        d.mkdir()
        shutil.copy(os.path.join(default_rules_dir(), "options.yaml"), d / "options.yaml")
    shutil.copy(fixture, d / os.path.basename(fixture))
    return str(d)


def test_the_shipped_rules_lint_clean_statically():
    code, out, _ = _lint("--no-sweep")
    assert code == 0 and out == "the rule pack is clean\n"


def test_every_check_has_a_broken_pack():
    covered = {_expectation(os.path.join(FIXTURES, f))[0] for f in STATIC}
    covered |= {_expectation(os.path.join(FIXTURES, "sweep", f))[0] for f in SWEEP}
    covered |= {"sweep-crash", "sweep-bad-fix"}  # made by breaking the code, below
    assert covered == set(CHECKS)


@pytest.mark.parametrize("name", STATIC)
def test_a_broken_pack_fails_with_its_check_at_file_and_line(tmp_path, name):
    check, line = _expectation(os.path.join(FIXTURES, name))
    code, out, _ = _lint("--rules", _pack(tmp_path, os.path.join(FIXTURES, name), full=False), "--format", "json")
    assert code == 1
    findings = json.loads(out)["findings"]
    assert any(f["check"] == check and f["file"].endswith(name) and f["line"] == line for f in findings), findings


@pytest.mark.slow  # half a minute: the README's test command skips it, CI runs it (.ci/run)
def test_a_restricted_sweep_of_the_shipped_rules_is_clean_and_says_what_it_covered():
    # one platform and kind keeps it short (the DSA kinds sweep twice as many requests; 'resolve lint' sweeps all)
    code, out, _ = _lint("--sweep-platform", "b200", "--sweep-model-kind", "mla", "--jobs", "1", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["findings"] == []
    sweep = doc["sweep"]
    assert sweep["requests"] == sweep["resolved"] + sweep["conflicts"] > 100 and sweep["fixes_checked"] > 0


def test_the_sweep_reports_crashes_and_fixes_that_do_not_resolve(monkeypatch):
    from resolver import api
    from resolver.api import get_engine
    from resolver.resolution import Fix
    from resolver.tools import sweep

    real = api.resolve_request
    report = sweep.SweepReport()

    def crashing(engine, **kw):
        raise RuntimeError("boom")

    monkeypatch.setattr(api, "resolve_request", crashing)
    sweep._check_one(get_engine(), {"platform": "sm90", "model_kind": "mha", "args": {}}, report)
    assert [k[0] for k in report.problems] == ["sweep-crash"] and "boom" in next(iter(report.problems.values()))[1]

    def bogus_fix(engine, **kw):
        res = real(engine, **kw)
        if kw.get("fixes", True) and res.conflicts:
            c = res.conflicts[0]
            bad = Fix("keep it", {"attention_backend": "flashmla"}, (), ("--attention-backend", "flashmla"))
            res.conflicts = (type(c)(**{**c.__dict__, "fixes": (bad,)}),) + res.conflicts[1:]
        return res

    monkeypatch.setattr(api, "resolve_request", bogus_fix)
    report = sweep.SweepReport()
    sweep._check_one(get_engine(), {"platform": "b200", "model_kind": "mha", "args": {"attention_backend": "flashmla"}},
                     report)
    assert any(k[0] == "sweep-bad-fix" for k in report.problems), report.problems


def test_bad_input_is_an_input_error(tmp_path):
    assert _lint("--rules", str(tmp_path / "nope"))[0] == 2
    assert "unknown kind" in _lint("--sweep-model-kind", "moe")[2]
    code, out, _ = _lint("--list-checks")
    assert code == 0 and all(check in out for check in CHECKS)
