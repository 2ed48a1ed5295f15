"""The argparse integration attached to SGLang 0.5.23's real parser, checked by SGLang itself.

tests/sglang_roundtrip_helper.py runs in the oracle's Python (sglang==0.5.23 under the oracle's
stubs, plus the resolver's dependencies): it parses real launch command lines with
``ServerArgs.add_cli_args`` + :func:`add_resolver_arguments`, resolves and writes back, then runs
SGLang's own whole resolution on the namespace as parsed and as written back.

Which Python and which oracle: tests/oracle.py.
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from resolver.api import get_engine
from tools.sglang_diff import oracle_lock

from .conftest import ROOT
from .oracle import ORACLE, oracle_python
from .test_parity import DIVERGENCE_RULES

HELPER = os.path.join(ROOT, "tests", "sglang_roundtrip_helper.py")

#: resolver values that are not SGLang 0.5.23's final value on the written-back namespace:
#: (case, option) -> (resolver, SGLang).  Each is a rule gap for rules/ to close; the test fails
#: when one appears or when a listed one is gone (then delete its line).
KNOWN_VALUE_DIFFS: dict[tuple[str, str], tuple[object, object]] = {
}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    python = oracle_python()
    out = tmp_path_factory.mktemp("sglang-roundtrip") / "report.json"
    with oracle_lock():
        run = subprocess.run([python, "-B", HELPER, "--oracle", ORACLE, "--out", str(out)],
                             capture_output=True, text=True, timeout=300, check=False,
                             env={**os.environ, "PYTHONHASHSEED": "0"})
    assert out.exists(), f"the helper failed ({run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    data = json.loads(out.read_text())
    # a crash SGLang does not raise as a launch error (the TypeError a None threshold caused) is
    # a harness failure of the oracle: name the case and the exception
    crashes = {cid: text.splitlines()[0] for cid, text in data["harness"].items()}
    assert not crashes and not data["violations"] and run.returncode == 0, (crashes, data["violations"],
                                                                            run.stderr[-3000:])
    return data


def _resolved(report):
    return [c for c in report["cases"] if c["status"] == "resolved"]


def test_the_command_lines_cover_the_launches_the_issue_names(report):
    cases = {c["id"]: c for c in report["cases"]}
    assert len(cases) >= 20 and len(_resolved(report)) >= 20
    seed = cases["seed-dsv32-hisparse-tilelang"]
    assert seed["status"] == "conflict" and seed["sglang"]["control"]["status"] == "error"
    typed = " ".join(" ".join(c["argv"]) for c in cases.values())
    for flag in ("--tp 8", "--dp 8", "--enable-dp-attention", "--speculative-algorithm EAGLE",
                 "--disaggregation-mode decode", "--disaggregation-decode-host-receive-threshold",
                 "--kv-cache-dtype nvfp4", "--moe-a2a-backend deepep --quantization fp8"):
        assert flag in typed, flag


def test_sglang_accepts_every_written_back_namespace(report):
    refused = {c["id"]: c["sglang"]["written"] for c in _resolved(report)
               if c["sglang"]["written"]["status"] != "resolved"}
    assert not refused, refused
    # and the resolver resolved nothing SGLang refuses as typed
    assert not [c["id"] for c in _resolved(report) if c["sglang"]["control"]["status"] != "resolved"]


def test_the_write_back_never_writes_none_and_round_trips(report):
    for case in _resolved(report):
        assert None not in case["wrote"].values(), (case["id"], case["wrote"])
        assert not case["roundtrip_changes"] and not case["roundtrip_value_changes"], case["id"]


def test_the_write_back_changes_no_sglang_decision(report):
    """SGLang ends the same with and without the write-back, except where the resolver spelled a
    deprecated value the way SGLang means it (``nsa`` -> ``dsa``)."""
    options = get_engine().pack.options
    for case in _resolved(report):
        changed = {d: (old, new) for d, (old, new) in case["writeback_changed_sglang"].items()
                   if not (d in options and options[d].value_aliases.get(old) == new)}
        assert not changed, (case["id"], changed)


def test_the_resolvers_values_are_sglangs_final_values(report):
    found = {(c["id"], name): (d["resolver"], d["sglang"]) for c in _resolved(report)
             for name, d in c["value_diffs"].items()}
    assert {k: v for k, v in found.items() if KNOWN_VALUE_DIFFS.get(k) != v} == {}, "new differences"
    assert {k: v for k, v in KNOWN_VALUE_DIFFS.items() if k not in found} == {}, "fixed: delete from KNOWN_VALUE_DIFFS"


def test_a_conflict_is_refused_by_sglang_too_or_a_documented_divergence(report):
    for case in (c for c in report["cases"] if c["status"] == "conflict"):
        if case["sglang"]["control"]["status"] == "resolved":
            assert set(case["conflict_rules"]) <= set(DIVERGENCE_RULES), case
