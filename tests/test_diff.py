"""resolve diff: the requests whose outcome changes between two rule packs, grouped and explained."""
import io
import itertools
import json
import shutil

import pytest

from resolver.cli import main
from resolver.loader import default_rules_dir

LLAMA = {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128}
DSV3 = {"architectures": ["DeepseekV3ForCausalLM"], "kv_lora_rank": 512, "num_key_value_heads": 128}
GRID = [{"id": f"{p}/{name}/{i}", "platform": p, "model": model, "args": args}
        for (p, (name, model), (i, args)) in itertools.product(
            ["h100", "b200", "mi300x"], [("llama", LLAMA), ("dsv3", DSV3)],
            enumerate([{}, {"attention_backend": "triton"}, {"kv_cache_dtype": "bfloat16"}, {"page_size": 16}]))]


def _copy_with(tmp_path, file, old, new):
    d = tmp_path / "new-rules"
    shutil.copytree(default_rules_dir(), d)
    text = (d / file).read_text()
    assert text.count(old) == 1
    (d / file).write_text(text.replace(old, new))
    return str(d)


def _diff(tmp_path, new, *extra):
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(r) + "\n" for r in GRID))
    out = io.StringIO()
    code = main(["diff", default_rules_dir(), new, "--requests", str(requests), *extra], out, io.StringIO())
    return code, out.getvalue()


def test_one_changed_default_reports_exactly_the_requests_it_decides(tmp_path):
    # Hopper's MHA default becomes flashinfer: exactly Llama on h100 without an explicit backend changes
    new = _copy_with(tmp_path, "attention.yaml", "    set: {attention_backend: fa3}\n    priority: 49",
                     "    set: {attention_backend: flashinfer}\n    priority: 49")
    code, out = _diff(tmp_path, new, "--format", "json")
    assert code == 1
    doc = json.loads(out)
    changed = {r["id"] for c in doc["changes"] for r in c["requests"]}
    expected = {r["id"] for r in GRID if r["platform"] == "h100" and r["model"] is LLAMA
                and "attention_backend" not in r["args"]}
    assert changed == expected and doc["changed"] == len(expected) and doc["requests"] == len(GRID)
    backend = next(c for c in doc["changes"] if c["change"] == "attention_backend: fa3 -> flashinfer")
    assert backend["kind"] == "value-changed" and backend["rules"][0].startswith("default.attention.hopper (")
    assert backend["shared"]["platforms"] == ["h100"] and backend["shared"]["models"] == ["LlamaForCausalLM"]


def test_a_narrowed_allowed_set_is_reported_as_now_refused_with_the_rule(tmp_path):
    new = _copy_with(tmp_path, "deterministic.yaml", "allowed: [ascend, fa3, fa4, flashinfer, intel_xpu, triton]",
                     "allowed: [ascend, fa3, fa4, flashinfer, intel_xpu]")
    global GRID
    saved = GRID
    GRID = [dict(r, args={**r["args"], "enable_deterministic_inference": True}) for r in saved]
    try:
        code, out = _diff(tmp_path, new)
    finally:
        GRID = saved
    assert code == 1
    assert "x with --attention-backend triton --enable-deterministic-inference on " in out
    assert ": now refused\n    rule: conflict.deterministic.backend (" in out


def test_identical_packs_change_nothing(tmp_path):
    same = tmp_path / "same"
    shutil.copytree(default_rules_dir(), same)
    code, out = _diff(tmp_path, str(same))
    assert code == 0 and out == f"0 of {len(GRID)} requests change outcome.\n"


@pytest.mark.parametrize("argv, message", [
    (["diff", "/nonexistent", "/nonexistent"], "is not a rule directory"),
    (["diff"], "the following arguments are required"),
])
def test_bad_input(argv, message):
    err = io.StringIO()
    assert main(argv, io.StringIO(), err) == 2 and message in err.getvalue()


def test_a_bad_requests_file_names_the_line(tmp_path):
    bad = tmp_path / "r.jsonl"
    bad.write_text('{"platform": "h100"}\nnot json\n')
    err = io.StringIO()
    assert main(["diff", default_rules_dir(), default_rules_dir(), "--requests", str(bad)], io.StringIO(), err) == 2
    assert f"{bad}:2: not valid JSON" in err.getvalue()


def test_invalid_requests_fail_the_gate_and_changed_counts_requests(tmp_path):
    requests = tmp_path / "r.jsonl"
    requests.write_text('{"id": "typo", "platform": "h10"}\n'
                        '{"id": "ok", "platform": "h100", "model_arch": "LlamaForCausalLM"}\n')
    out = io.StringIO()
    argv = ["diff", default_rules_dir(), default_rules_dir(), "--requests", str(requests)]
    assert main(argv, out, io.StringIO()) == 2
    assert "invalid under both packs: typo: unknown platform 'h10'" in out.getvalue()
    requests.write_text('{"platform": "h100", "model_config": "x"}\n')
    err = io.StringIO()
    assert main(argv, io.StringIO(), err) == 2
    assert "unknown request key(s) ['model_config']" in err.getvalue()
    # one request changing two values counts once
    new = _copy_with(tmp_path, "attention.yaml", "    set: {attention_backend: fa3}\n    priority: 49",
                     "    set: {attention_backend: flashinfer}\n    priority: 49")
    code, out = _diff(tmp_path, new, "--format", "json")
    doc = json.loads(out)
    assert doc["changed"] == len({r["id"] for c in doc["changes"] for r in c["requests"]})
