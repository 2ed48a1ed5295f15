"""Short answers, detail on request, and why not X (issue 13, parts 3 and 5; docs/explain.md)."""
import io
import json
from types import SimpleNamespace

import pytest

from resolver import resolve
from resolver.api import get_engine, resolve_request
from resolver.cli import main
from resolver.explain import _typed, conflict_order
from resolver.outcome import kernel_verdict as _verdict
from resolver.why_not import first_false, why_not

DSV32 = ["--model-arch", "DeepseekV32ForCausalLM"]
SEED = ["--platform", "h100", *DSV32, "--kv-cache-dtype", "fp8_e4m3", "--enable-hisparse", "--disable-radix-cache",
        "--dsa-decode-backend", "tilelang"]
#: requests that conflict, with the number of conflicts each must report
CONFLICTS = {
    "seed": (SEED, 2),
    "deterministic-dsv32-h100": (["--platform", "h100", *DSV32, "--enable-deterministic-inference"], 2),
    "nvfp4-h100": (["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--kv-cache-dtype", "nvfp4"], 1),
    "nvfp4-mi300x": (["--platform", "mi300x", "--model-arch", "LlamaForCausalLM", "--kv-cache-dtype", "nvfp4"], 2),
    "kernel-a100": (["--platform", "a100", *DSV32, "--dsa-decode-backend", "flashmla_kv"], 2),
    "none-runs-a100": (["--platform", "a100", *DSV32], 2),
}


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out, err)
    return code, out.getvalue(), err.getvalue()


def _request(argv):
    """The Resolution behind a command line (the CLI's own parsing)."""
    from resolver.argv import launch_request
    from resolver.argv import parse as _parse
    from resolver.core import resolve

    engine = get_engine(None)
    return resolve(engine, launch_request(engine, _parse(argv, engine.pack)))


@pytest.mark.parametrize("name", sorted(CONFLICTS))
def test_a_conflict_report_is_short_and_every_conflict_is_still_reported(name):
    argv, count = CONFLICTS[name]
    code, text, _ = _cli(argv)
    assert code == 1
    doc = json.loads(_cli([*argv, "--format", "json"])[1])
    assert len(doc["conflicts"]) == count
    for c in doc["conflicts"]:
        assert c["message"] in text  # shown in full, or folded on its "also:" line
        # evidence never in the headline: the adapters' evidence strings end in "[adapter NAME, SOURCE; STRENGTH]"
        assert "; strong]" not in c["message"] and "; medium]" not in c["message"]
    for hidden in ("    rule: ", "    caused by:", "    evidence: "):
        assert hidden not in text
    code, explained, _ = _cli([*argv, "--explain"])
    assert code == 1 and "    caused by:" in explained and "    rule: " in explained


def test_the_kernel_evidence_is_behind_explain():
    argv = CONFLICTS["kernel-a100"][0]
    doc = json.loads(_cli([*argv, "--format", "json", "--explain"])[1])
    (c,) = [c for c in doc["conflicts"] if c["rule"]["id"] == "conflict.kernel.dsa-decode.cannot-run"]
    assert "kernel adapter flashmla, see --explain" in c["message"]
    why = c["details"]["kernel.dsa_decode_backend_why"]
    assert why.endswith("[adapter flashmla, built-in; strong]")
    assert why in " ".join(_cli([*argv, "--explain"])[1].split()) or why[:60] in _cli([*argv, "--explain"])[1]
    compact = json.loads(_cli([*argv, "--format", "json"])[1])
    assert all("details" not in c and "evidence" not in c for c in compact["conflicts"])


@pytest.mark.parametrize("name", sorted(CONFLICTS))
def test_follows_from_is_the_documented_relation(name):
    res = _request(CONFLICTS[name][0])
    ordered = conflict_order(res)
    assert sorted(id(c) for c, _ in ordered) == sorted(id(c) for c in res.conflicts)  # none lost, none twice
    for c, parent in ordered:
        if parent is None:
            continue
        leader, grand = ordered[parent]
        assert grand is None and leader.fixes  # folded under a conflict that is shown, and has fixes
        changes = {(tuple(sorted(f.set.items())), tuple(sorted(f.unset))) for f in leader.fixes}
        assert {(tuple(sorted(f.set.items())), tuple(sorted(f.unset))) for f in c.fixes} <= changes
        assert _typed(res, c) <= _typed(res, leader)


def test_the_operator_transcripts_fold_what_follows():
    for name, leader, folded in [
        ("deterministic-dsv32-h100", "conflict.deterministic.absorbed-mla", "conflict.deterministic.backend"),
        ("nvfp4-mi300x", "conflict.kv.kv4-cuda-only", "conflict.trtllm-mha.decode-platform"),
        ("seed", "conflict.hisparse.decode.cuda-fp8", "conflict.dsa.tilelang-fp8.hisparse"),
    ]:
        doc = json.loads(_cli([*CONFLICTS[name][0], "--format", "json"])[1])
        ids = [c["rule"]["id"] for c in doc["conflicts"]]
        assert ids.index(leader) == 0, (name, ids)
        assert doc["conflicts"][ids.index(folded)]["follows_from"] == 0, name


def test_a_platform_root_cause_comes_first_whatever_the_resolution_order():
    res = _request(CONFLICTS["nvfp4-mi300x"][0])
    for conflicts in (res.conflicts, tuple(reversed(res.conflicts))):
        view = SimpleNamespace(conflicts=conflicts, pack=res.pack, request=res.request)
        ordered = conflict_order(view)
        assert ordered[0][0].rule.id == "conflict.kv.kv4-cuda-only" and ordered[0][1] is None
        assert ordered[1][0].rule.id == "conflict.trtllm-mha.decode-platform" and ordered[1][1] == 0


def test_an_untyped_backend_is_not_printed_as_a_typed_flag():
    _, text, _ = _cli(CONFLICTS["nvfp4-h100"][0])
    assert "--attention-backend fa3" not in text and "attention_backend fa3 (picked by default rule " in text
    _, text, _ = _cli(SEED)
    assert "  - --dsa-decode-backend tilelang: whether this kernel runs on sm90 is unknown" in text


@pytest.mark.parametrize("platform, args", [
    ("h100", {}),
    ("h100", {"kv_cache_dtype": "fp8_e4m3"}),
    ("b200", {}),
    ("mi300x", {}),
])
def test_every_why_not_reason_holds(platform, args):
    """Each reason the why-not list gives is checked against the thing it names."""
    res = resolve(args, platform=platform, model_arch="DeepseekV32ForCausalLM")
    facts = {n: f.value for n, f in res.outcome.facts.items()}
    losers = res.answer_why_not("dsa_decode_backend").why_not["dsa_decode_backend"]
    assert losers and res.values["dsa_decode_backend"] not in [w.value for w in losers]
    pack = res.engine.pack
    for w in losers:
        typed = resolve_request(res.engine, platform=platform, model_arch="DeepseekV32ForCausalLM",
                                args={**args, "dsa_decode_backend": w.value}, fixes=False)
        assert w.resolves == typed.ok, w
        raised = {c.rule.id for c in typed.conflicts}
        for r in w.reasons:
            if r.kind == "conflict":
                assert r.rule in raised
            elif r.kind == "kernel":
                verdict = _verdict(res.request, "dsa_decode", w.value, res.outcome.facts)
                assert verdict.status in ("unsupported", "refused") and verdict.status in r.text
            elif r.kind == "not-fired":
                rule = pack.rule(r.rule)
                assert rule.set["dsa_decode_backend"] == w.value and not rule.when.holds(facts)
                assert str(first_false(rule.when, facts)[0]) in r.text
            elif r.kind in ("shadowed", "skipped"):
                assert any(c.rule.id == r.rule and c.outcome == r.kind
                           for c in res.derivations["dsa_decode_backend"].candidates)


def test_why_not_fa3_flashmla_sparse_tilelang():
    """The operator's question: with an FP8 KV cache on h100 decode runs flashmla_kv; why not the others?"""
    code, text, _ = _cli(["--platform", "h100", *DSV32, "--kv-cache-dtype", "fp8_e4m3",
                          "--explain", "dsa_decode_backend"])
    assert code == 0 and "dsa_decode_backend = flashmla_kv" in text
    lines = {line.split(":", 1)[0].strip("- ").strip(): line for line in text.splitlines()
             if line.startswith("      - ")}
    for value in ("fa3", "flashmla_sparse", "tilelang", "trtllm"):
        assert value in lines, value
        assert any(why in lines[value] for why in ("did not fire", "typed, it raises", "adapter", "lower than")), value
    assert ("default default.dsa.backends.bf16 proposes it with priority 20, lower than default.dsa.backends.fp8's"
            in lines["fa3"])
    assert "typed, it raises conflict.kernel.dsa-decode.cannot-run" in lines["trtllm"]


def test_a_typed_option_has_no_why_not():
    res = resolve({"dsa_decode_backend": "flashmla_kv", "kv_cache_dtype": "fp8_e4m3"}, platform="h100",
                  model_arch="DeepseekV32ForCausalLM")
    assert why_not(res, "dsa_decode_backend") == []


def test_the_short_explain_is_short_and_the_full_one_is_asked_for():
    code, short, _ = _cli(["--platform", "h100", *DSV32, "--explain"])
    assert code == 0 and len(short.splitlines()) <= 80
    assert "├─" not in short and "└─" not in short  # no fact tree
    assert "  dsa_decode_backend = fa3, by default rule default.dsa.backends.bf16 (rules/dsa.yaml:" in short
    code, verbose, _ = _cli(["--platform", "h100", *DSV32, "--explain", "--verbose"])
    assert code == 0 and "└─" in verbose and len(verbose.splitlines()) > 3 * len(short.splitlines())


def test_the_default_json_is_compact_and_keeps_the_contract():
    compact = _cli(["--platform", "h100", *DSV32, "--format", "json"])[1]
    full = _cli(["--platform", "h100", *DSV32, "--format", "json", "--explain"])[1]
    assert len(compact) < 30_000 and len(full) > 150_000
    doc = json.loads(compact)
    assert {"status", "platform", "model", "values", "env", "derivations", "conflicts", "warnings", "unchecked",
            "kernels"} <= set(doc)
    assert "facts" not in doc and "derived_facts" not in doc and "origins" not in doc["model"]
    d = doc["derivations"]["dsa_decode_backend"]
    assert d["value"] == "fa3" and d["source"] == "default" and d["rule"]["id"] == "default.dsa.backends.bf16"
    assert [f["name"] for f in d["facts"]] == ["model.dsa_resolved"] and d["candidates"] == []  # the contract's keys
    assert all(x["source"] != "fallback" or x.get("candidates") for x in doc["derivations"].values())
    conflict = json.loads(_cli([*SEED, "--format", "json"])[1])["conflicts"][0]
    assert {"rule", "message", "options", "facts", "allowed", "fixes", "follows_from"} <= set(conflict)
    assert all({"description", "set", "unset", "argv"} <= set(f) for f in conflict["fixes"])
    assert all({"name", "value", "source", "origin"} <= set(f) for f in conflict["facts"])


def test_the_api_keeps_the_full_form():
    res = resolve({}, platform="h100", model_arch="DeepseekV32ForCausalLM")
    assert "derived_facts" in res.to_dict() and "derived_facts" not in res.to_dict(explain=False)
    assert "    why not (" not in res.explain() and "    why not (" in res.explain("dsa_decode_backend")


@pytest.mark.parametrize("extra", [[], ["--explain"], ["--explain", "--verbose"], ["--explain", "dsa_decode_backend"]])
def test_every_line_fits_an_explicit_columns(monkeypatch, extra):
    monkeypatch.setenv("COLUMNS", "70")
    for argv in (["--platform", "b200", *DSV32], SEED):
        text = _cli([*argv, *extra])[1]
        assert max(map(len, text.splitlines())) <= 70, [line for line in text.splitlines() if len(line) > 70][:3]


def test_without_fixes_nothing_is_folded():
    doc = json.loads(_cli([*CONFLICTS["deterministic-dsv32-h100"][0], "--no-fixes", "--format", "json"])[1])
    assert len(doc["conflicts"]) == 2 and all(c["follows_from"] is None for c in doc["conflicts"])


def test_why_not_a_value_re_resolves_with_it_typed():
    code, text, _ = _cli(["--platform", "h100", *DSV32, "--why-not", "dsa_decode_backend=trtllm"])
    assert code == 0  # the request's own status: it resolves
    assert text.startswith("why not dsa_decode_backend = trtllm? (the request gives dsa_decode_backend = fa3)")
    assert "with --dsa-decode-backend trtllm typed, the request raises:" in text
    assert "The trtllm DSA decode kernel cannot run on sm90" in text
    code, text, _ = _cli(["--platform", "h100", *DSV32, "--why-not", "dsa_decode_backend=tilelang"])
    assert code == 0 and "typed, the request resolves; it is not picked because:" in text
    assert "default default.dsa.backends.hisparse-rocm did not fire: needs enable_hisparse" in text
    code, text, _ = _cli(["--platform", "h100", *DSV32, "--why-not", "page_size=128"])
    assert "the request resolves, but adjust.dsa.page.cuda changes it to 64" in text
    code, _, err = _cli(["--platform", "h100", *DSV32, "--why-not", "dsa_decode_backnd=fa3"])
    assert code == 2 and "Did you mean 'dsa_decode_backend'?" in err
    code, text, _ = _cli([*SEED, "--why-not", "dsa_decode_backend=flashmla_kv"])
    assert code == 1 and "with conflicts)" in text.splitlines()[0]
