"""An answer never claims more than was checked (issue 24): the checks SGLang would make on a launch that
no rule encodes are named in every answer (JSON ``not_checked``, one text section, the batch), and
``--require-all-checks`` turns them into exit 1 (status ``unchecked``) for CI gates."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from resolver import api, core, resolve
from resolver.checks import catalogue
from resolver.cli import main

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

LLAMA = {"platform": "h100", "model_arch": "LlamaForCausalLM"}
#: a not-modelled check as the catalogue has it (its plumbing is what these tests look at)
SOME_CHECK = next(c for c in catalogue() if c.status == "not-modelled" and c.fields)


@pytest.fixture
def one_unevaluated(monkeypatch):
    """Every resolution names SOME_CHECK as not evaluated (the catalogue's own choice is tested below)."""
    monkeypatch.setattr(core, "not_checked", lambda *args, **kwargs: (SOME_CHECK,))


def _cli(argv, stdin=None):
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        return main(argv, out, err), out.getvalue(), err.getvalue()
    finally:
        sys.stdin = saved


def test_a_plain_launch_leaves_no_sglang_check_unevaluated():
    deepseek = {"platform": "h200", "model": CATALOGUE["deepseek-ai/DeepSeek-V3"]}
    fp8_kv = {"tp_size": 2, "kv_cache_dtype": "fp8_e4m3"}
    for args, kwargs in (({}, LLAMA), ({"tp_size": 8}, deepseek), (fp8_kv, LLAMA)):
        res = resolve(args, **kwargs)
        assert res.not_checked == () and res.status == "resolved", [c.id for c in res.not_checked]


def test_an_unevaluated_check_is_named_in_json_and_text(one_unevaluated):
    code, out, _ = _cli(["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--format", "json"])
    doc = json.loads(out)
    assert code == 0 and doc["status"] == "resolved"
    reads = [*SOME_CHECK.fields, *SOME_CHECK.env, *(f"model.{m}" for m in SOME_CHECK.model)]
    assert doc["not_checked"] == [{"check": SOME_CHECK.id, "site": SOME_CHECK.site, "reads": reads,
                                   "message": SOME_CHECK.message}]
    code, text, _ = _cli(["--platform", "h100", "--model-arch", "LlamaForCausalLM"])
    assert code == 0 and "resolved configuration (1 SGLang check not evaluated: see below):" in text
    assert "not evaluated: 1 SGLang check that no rule encodes read what this launch sets:" in text
    assert f"  - {SOME_CHECK.id} (" in text


def test_require_all_checks_makes_it_exit_1_in_every_front_door(one_unevaluated):
    argv = ["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--require-all-checks"]
    code, out, _ = _cli([*argv, "--format", "json"])
    assert code == 1 and json.loads(out)["status"] == "unchecked"
    code, text, _ = _cli(argv)
    assert code == 1 and "(--require-all-checks: not accepted)" in text
    code, out, err = _cli([*argv, "--format", "args"])
    assert code == 1 and out.startswith("python -m sglang.launch_server") and SOME_CHECK.id in err
    line = json.dumps({"id": "x", **LLAMA})
    code, out, err = _cli(["--batch", "-", "--require-all-checks"], stdin=line + "\n")
    assert code == 1 and json.loads(out)["status"] == "unchecked"
    assert "batch: 0 resolved, 1 with SGLang checks not evaluated, 0 conflicted, 0 failed" in err
    code, out, _ = _cli(["--batch", "-"], stdin=json.dumps({"id": "x", **LLAMA, "require_all_checks": True}) + "\n")
    assert code == 1 and json.loads(out)["status"] == "unchecked"
    code, out, _ = _cli(["--batch", "-"], stdin=line + "\n")
    assert code == 0 and json.loads(out)["status"] == "resolved" and json.loads(out)["not_checked"]
    res = resolve({}, **LLAMA)  # the API reports them; resolve() raises only for conflicts
    assert res.ok and res.not_checked == (SOME_CHECK,)


def test_a_conflict_is_reported_as_before_whatever_went_unevaluated(one_unevaluated):
    code, out, _ = _cli(["--platform", "h100", "--model-arch", "DeepseekV32ForCausalLM", "--kv-cache-dtype",
                         "fp8_e4m3", "--enable-hisparse", "--disable-radix-cache", "--dsa-decode-backend", "tilelang",
                         "--require-all-checks", "--no-fixes"])
    assert code == 1 and "not evaluated:" not in out


def _sglang(request: dict, tmp_path) -> dict:
    python = oracle_python()
    env = {**os.environ, "SGLANG_ORACLE_FIXTURE": str(tmp_path / "fixture")}
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps(request) + "\n")
    proc = subprocess.run([python, "-B", os.path.join(ORACLE, "ask.py"), str(requests)], capture_output=True,
                          text=True, env=env, cwd=os.path.dirname(ORACLE), timeout=300, check=True)
    return json.loads(proc.stdout.splitlines()[0])["sglang"]


def test_what_sglang_refuses_is_a_conflict_or_a_named_check(tmp_path):
    """LoRA with fewer loaded adapters than a batch may hold: SGLang refuses it.  The resolver answers with
    a conflict, or resolves and names the refusing check; never a silent "resolved"."""
    config = CATALOGUE["meta-llama/Llama-3.1-8B-Instruct"]
    args = {"enable_lora": True, "max_loaded_loras": 1, "max_loras_per_batch": 4}
    sglang = _sglang({"id": "lora", "platform": "sm90", "model": config, "args": args}, tmp_path)
    assert sglang["status"] == "error"
    res = api.resolve_request(api.get_engine(), platform="h100", model=config, args=args, fixes=False)
    raised = sglang["raised_in"]
    assert res.conflicts or any(c.sglang_name == raised for c in res.not_checked), \
        (raised, [c.id for c in res.not_checked])
