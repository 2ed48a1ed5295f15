"""Golden files pin the text of --explain and of conflict reports (and the JSON of the seed).

Regenerate after an intended change with ``UPDATE_GOLDEN=1 pytest tests/test_golden.py`` and
review the diff.
"""
import io
import json
import os

import pytest

from resolver.cli import main

from .conftest import ROOT, SEED_ARGV

GOLDEN = os.path.join(ROOT, "tests", "golden")
DSV32 = ["--model-arch", "DeepseekV32ForCausalLM"]

CASES = {
    "seed-conflict.txt": SEED_ARGV,
    "seed-conflict.json": SEED_ARGV + ["--format", "json"],
    "seed-without-decode-explain.txt": ["--platform", "h100", *DSV32, "--kv-cache-dtype", "fp8_e4m3",
                                        "--enable-hisparse", "--disable-radix-cache", "--explain"],
    "b200-dsa-explain.txt": ["--platform", "b200", *DSV32, "--explain"],
    # the "allowed" line names the option the rule restricts (kv_cache_dtype), not the first one involved
    "deepseek-v3-b200-bfloat16-kv.txt": ["--platform", "b200", "--model-arch", "DeepseekV3ForCausalLM",
                                         "--kv-cache-dtype", "bfloat16"],
    "mi300x-dsa-page-explain.txt": ["--platform", "mi300x", *DSV32, "--page-size", "64", "--explain"],
    "a100-dsa-explain-one-option.txt": ["--platform", "a100", *DSV32, "--explain", "dsa_decode_backend"],
    "rtx5090-glm-fp8.txt": ["--platform", "rtx5090", "--model-arch", "GlmMoeDsaForCausalLM", "--explain"],
    "llama-h100-explain.txt": ["--platform", "h100", "--model-config",
                               os.path.join(ROOT, "tests", "fixtures", "llama-config.json"), "--explain"],
    "llama-b200-explain.txt": ["--platform", "b200", "--model-config",
                               os.path.join(ROOT, "tests", "fixtures", "llama-config.json"), "--explain"],
    "llama-rtx5090-explain.txt": ["--platform", "rtx5090", "--model-config",
                                  os.path.join(ROOT, "tests", "fixtures", "llama-config.json"), "--explain"],
    "llama-mi300x-explain.txt": ["--platform", "mi300x", "--model-config",
                                 os.path.join(ROOT, "tests", "fixtures", "llama-config.json"), "--explain"],
    "llama-a100-explain.txt": ["--platform", "a100", "--model-config",
                               os.path.join(ROOT, "tests", "fixtures", "llama-config.json"), "--explain"],
    "llama-h100-explain.json": ["--platform", "h100", "--model-config",
                                os.path.join(ROOT, "tests", "fixtures", "llama-config.json"), "--format", "json"],
    "deepseek-v3-b200-trtllm-mla.txt": ["--platform", "b200", "--model-config",
                                        os.path.join(ROOT, "tests", "fixtures", "deepseek-v3-config.json"),
                                        "--page-size", "16", "--explain"],
    "strict-page-size.txt": ["--platform", "h100", *DSV32, "--page-size", "128", "--strict"],
    # issue 13's operator transcripts: the folded deterministic conflicts, the platform root cause first,
    # the values dsa_decode_backend lost and why (why not fa3 / flashmla_sparse / tilelang ...)
    "deterministic-dsv32-h100.txt": ["--platform", "h100", *DSV32, "--enable-deterministic-inference"],
    "deterministic-dsv32-h100-explain.txt": ["--platform", "h100", *DSV32, "--enable-deterministic-inference",
                                             "--explain"],
    "nvfp4-h100.txt": ["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--kv-cache-dtype", "nvfp4"],
    "nvfp4-mi300x.txt": ["--platform", "mi300x", "--model-arch", "LlamaForCausalLM", "--kv-cache-dtype", "nvfp4"],
    "h100-dsa-why-not-decode.txt": ["--platform", "h100", *DSV32, "--explain", "dsa_decode_backend"],
    "h100-dsa-explain.txt": ["--platform", "h100", *DSV32, "--explain"],
    "seed-conflict-explain.json": SEED_ARGV + ["--format", "json", "--explain"],
    "llama-h100-verbose.txt": ["--platform", "h100", "--model-config",
                               os.path.join(ROOT, "tests", "fixtures", "llama-config.json"), "--explain", "--verbose"],
    "a100-kernel-conflict.txt": ["--platform", "a100", *DSV32, "--dsa-decode-backend", "flashmla_kv"],
    # fixes in the order an operator takes them: fp8_e4m3 (FA3 keeps running) before fp8_e5m2, which says that
    # it also changes attention_backend fa3 -> triton; no "use auto" beside "omit"; nothing Blackwell-only
    "mxfp8-llama-h100.txt": ["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--kv-cache-dtype", "mxfp8"],
    "mxfp8-dsv32-h100.txt": ["--platform", "h100", *DSV32, "--kv-cache-dtype", "mxfp8"],
    # without --strict the page size is changed with a warning; with it, the fixes keep the typed page size with
    # another backend (flashinfer first) before giving it up
    "deepseek-v3-b200-page-16.txt": ["--platform", "b200", "--model-arch", "DeepseekV3ForCausalLM",
                                     "--page-size", "16"],
    "deepseek-v3-b200-page-16-strict.txt": ["--platform", "b200", "--model-arch", "DeepseekV3ForCausalLM",
                                            "--page-size", "16", "--strict"],
    "sink-conflicts.txt": ["--platform", "b200", "--model-config",
                           os.path.join(ROOT, "tests", "fixtures", "hyv4-config.json"),
                           "--kv-cache-dtype", "fp8_e4m3", "--dsa-decode-backend", "trtllm"],
}


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out, err)
    text = out.getvalue()
    shown = " ".join(a if a != ROOT and not a.startswith(ROOT) else a.replace(ROOT, ".") for a in argv)
    return f"$ resolve {shown}\n" \
           f"exit {code}\n{text}{err.getvalue()}".replace(ROOT, ".")


@pytest.fixture(autouse=True)
def _unwrapped(monkeypatch):
    # an explicit COLUMNS wraps even a pipe: the goldens are the unwrapped text
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    got = _run(CASES[name])
    path = os.path.join(GOLDEN, name)
    if os.environ.get("UPDATE_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(got)
    with open(path, encoding="utf-8") as fh:
        assert got == fh.read()


def test_json_keeps_what_the_text_shows():
    out = io.StringIO()
    main(SEED_ARGV + ["--format", "json"], out, io.StringIO())
    doc = json.loads(out.getvalue())
    text, explained = io.StringIO(), io.StringIO()
    main(SEED_ARGV, text, io.StringIO())
    main(SEED_ARGV + ["--explain"], explained, io.StringIO())
    for conflict in doc["conflicts"]:
        assert conflict["message"] in text.getvalue()  # folded or not, every conflict is reported
        # the rule (with file:line) is behind --explain
        rule = f"{conflict['rule']['id']} ({conflict['rule']['file']}:{conflict['rule']['line']})"
        assert rule in explained.getvalue() and rule not in text.getvalue()
        shown = doc["conflicts"][conflict["follows_from"]] if conflict["follows_from"] is not None else conflict
        for fix in shown["fixes"]:
            assert fix["description"] in text.getvalue()
        # a folded conflict's fixes are among those shown (the definition of "follows from")
        changes = [(f["set"], sorted(f["unset"])) for f in shown["fixes"]]
        assert all((f["set"], sorted(f["unset"])) in changes for f in conflict["fixes"])
        assert " ".join(conflict["root_cause"].split()) in " ".join(text.getvalue().split())


def test_json_keeps_the_trees_of_the_text():
    """Every node of a resolved --explain tree is in the JSON: an option's facts in its derivation, a derived
    fact's own facts in derived_facts."""
    argv = ["--platform", "h100", "--model-config", os.path.join(ROOT, "tests", "fixtures", "llama-config.json")]
    doc_out, text_out = io.StringIO(), io.StringIO()
    main(argv + ["--format", "json", "--explain"], doc_out, io.StringIO())
    main(argv + ["--explain", "--verbose"], text_out, io.StringIO())
    doc, text = json.loads(doc_out.getvalue()), text_out.getvalue()
    nodes = {line.split("─ ", 1)[1].split(" = ")[0].strip() for line in text.splitlines() if "─ " in line}
    known = {f["name"] for d in doc["derivations"].values() for f in d["facts"]}
    known |= {f["name"] for d in doc["derived_facts"].values() for f in d["facts"]}
    assert nodes and nodes <= known, nodes - known
