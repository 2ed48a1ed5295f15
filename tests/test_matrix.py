"""``resolve matrix``: the compatibility tables are resolutions through the engine, and the page is fresh."""
import io
import json
import os

import pytest

from resolver import commands
from resolver.api import get_engine, resolve_request
from resolver.cli import main
from resolver.tools.matrix import MODEL_KINDS, matrix, render_json, render_markdown, survey

from .conftest import ROOT

KIND = {k.key: k for k in MODEL_KINDS}


# a rule pack small enough to resolve the whole matrix in a moment: the shipped options, a default
# attention backend for NVIDIA and a refusal of fa3 on ROCm
SMALL_PACK = """
schema: resolver/1
doc: A small pack for the matrix tests.
rules:
  - id: default.test.flashinfer-on-nvidia
    kind: default
    doc: NVIDIA runs flashinfer.
    when: platform.vendor == "nvidia"
    set: {attention_backend: flashinfer}
    priority: 10
  - id: conflict.test.fa3-not-on-rocm
    kind: conflict
    doc: fa3 has no ROCm build.
    when: attention_backend == "fa3" and platform.vendor == "amd"
    message: The fa3 kernel does not run on {platform.name}; it has no ROCm build.
"""


def _run(argv):
    out = io.StringIO()
    assert matrix(argv, out) == 0
    return out.getvalue()


# the shipped matrix takes seconds to resolve: it is surveyed once per module, and both formats are rendered from
# that survey as `resolve matrix` renders them (the command itself runs end to end on the small pack below)
@pytest.fixture(scope="module")
def shipped():
    return survey(get_engine(), 1)


@pytest.fixture(scope="module")
def page(shipped):
    return render_markdown(shipped, None)


@pytest.fixture(scope="module")
def data(shipped):
    return json.loads(render_json(shipped, None))


def _default(data, model, kv, platform):
    [cell] = [c for c in data["defaults"] if (c["model"], c["kv_cache_dtype"], c["platform"]) == (model, kv, platform)]
    return cell


def _choice(data, option, value, model, platform):
    [cell] = [c for c in data["choices"]
              if (c["option"], c["value"], c["model"], c["platform"]) == (option, value, model, platform)]
    return cell


def test_compatibility_page_is_the_markdown_output(page):
    with open(os.path.join(ROOT, "docs", "compatibility.md"), encoding="utf-8") as fh:
        assert fh.read() == page, \
            "docs/compatibility.md is stale; run: resolve matrix --format markdown > docs/compatibility.md"


def test_markdown_is_the_default_and_says_how_it_is_made(page):
    assert page.startswith("# Compatibility matrix\n")
    assert "`resolve matrix --format markdown > docs/compatibility.md`: do not edit it by hand" in page


def test_dsa_defaults_on_h100_are_what_a_resolution_picks(engine, data):
    cell = _default(data, "dsa", "auto", "sm90")
    res = resolve_request(engine, platform="h100", model=KIND["dsa"].config, fixes=False)
    assert res.ok and cell["status"] == "resolved" and cell["conflicts"] == []
    for option in ("attention_backend", "dsa_prefill_backend", "dsa_decode_backend", "kv_cache_dtype"):
        assert cell["values"][option] == res.values[option], option


def test_defaults_that_conflict_carry_the_rule_and_message(engine, data):
    cell = _default(data, "dsa", "auto", "sm120")
    res = resolve_request(engine, platform="rtx5090", model=KIND["dsa"].config, fixes=False)
    assert cell["status"] == "conflict"
    assert [(c["rule"], c["message"]) for c in cell["conflicts"]] == [(c.rule.id, c.message) for c in res.conflicts]


def test_explicit_trtllm_dsa_decode_on_rtx5090_is_refused(data):
    cell = _choice(data, "dsa_decode_backend", "trtllm", "dsa", "sm120")
    assert cell["status"] == "refused"
    assert "conflict.kernel.dsa-decode.cannot-run" in [c["rule"] for c in cell["conflicts"]]
    assert all(c["message"] for c in cell["conflicts"])


def test_explicit_choice_kept_where_it_runs(data):
    cell = _choice(data, "dsa_decode_backend", "trtllm", "dsa", "sm100")
    assert cell["status"] == "accepted" and cell["resolved_value"] == "trtllm"
    assert cell["conflicts"] == [] and cell["other_conflicts"] == []


def test_a_conflict_the_launch_has_anyway_is_not_blamed_on_the_choice(data):
    # DeepSeek V3.2 on an A100: no default DSA decode kernel runs, whatever the prefill backend
    baseline = {c["rule"] for c in _default(data, "dsa", "auto", "sm80")["conflicts"]}
    cell = _choice(data, "dsa_prefill_backend", "tilelang", "dsa", "sm80")
    assert cell["status"] == "accepted"
    assert {c["rule"] for c in cell["other_conflicts"]} <= baseline and cell["other_conflicts"]


def test_every_cell_is_present_once(data):
    platforms, kinds = data["platforms"], data["models"]
    assert len(data["defaults"]) == len(kinds) * len(data["kv_cache_dtypes"]) * len(platforms)
    keys = [(c["option"], c["value"], c["model"], c["platform"]) for c in data["choices"]]
    assert len(keys) == len(set(keys))
    assert {c["status"] for c in data["choices"]} <= {"accepted", "rewritten", "refused"}


def test_another_rule_pack_in_every_format(rules_dir):
    pack = rules_dir({"test.yaml": SMALL_PACK}, with_shipped_options=True)
    text = _run(["--rules", pack, "--format", "text"])
    assert "Explicit choices: --attention-backend" in text and "`" not in text
    assert "[1] conflict.test.fa3-not-on-rocm: The fa3 kernel does not run on this platform." in text
    fa3 = next(line for line in text.splitlines() if line.startswith("fa3 ")).split()
    assert fa3[2:] == ["ok"] * 8 + ["✗", "[1]"] * 2  # MHA row: the 8 NVIDIA platforms, then the 2 ROCm ones
    page = _run(["--rules", pack])
    assert f"`resolve matrix --rules {pack} --format markdown`" in page and "docs/compatibility.md" not in page
    cells = json.loads(_run(["--rules", pack, "--format", "json"]))["defaults"]
    assert {c["values"]["attention_backend"] for c in cells if c["platform"] == "sm90"} == {"flashinfer"}


@pytest.mark.parametrize("argv", [["matrix", "--format", "xml"], ["matrix", "--rules", "/no/such/rules/dir"],
                                  ["matrix", "--no-such-flag"]])
def test_bad_input_exits_2(monkeypatch, argv):
    monkeypatch.setitem(commands.SUBCOMMANDS, "matrix", matrix)
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 2
    assert err.getvalue().startswith("resolve: error:") and out.getvalue() == ""
