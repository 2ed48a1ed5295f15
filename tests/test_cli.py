"""The command line: exit codes, bad input without tracebacks, batch mode, deprecated aliases."""
import io
import json
import os
import re
import subprocess
import sys

import pytest

from resolver.cli import main

from .conftest import ROOT, SEED_ARGV

BASE = ["--platform", "h100", "--model-arch", "DeepseekV32ForCausalLM"]


def _cli(argv, stdin=None):
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        old = sys.stdin
        sys.stdin = io.StringIO(stdin)
    try:
        code = main(argv, out, err)
    finally:
        if stdin is not None:
            sys.stdin = old
    return code, out.getvalue(), err.getvalue()


def test_resolved_exits_0():
    code, out, err = _cli(BASE)
    assert code == 0 and re.search(r"dsa_decode_backend += fa3", out) and err == ""


def test_one_launch_matches_in_python_and_a_batch_on_durable_rules(monkeypatch, tmp_path):
    """The command line on one launch never touches durable-rules (Engine.one_shot: building the rulesets would
    cost more than the resolution); --batch resolves every line on it."""
    from resolver.engine import Engine

    real = Engine.durable
    used = []
    monkeypatch.setattr(Engine, "durable", property(lambda self: used.append(1) or real.fget(self)))
    code, out, _ = _cli([*SEED_ARGV, "--explain"])
    assert code == 1 and "to fix, any one of:" in out and used == []
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps({"platform": "h100", "model_arch": "LlamaForCausalLM"}) + "\n")
    code, out, _ = _cli(["--batch", str(batch)])
    assert code == 0 and used


@pytest.mark.parametrize("argv, needle", [
    (BASE + ["--kv-cache-dtpe", "fp8_e4m3"], "Did you mean --kv-cache-dtype?"),
    (BASE + ["--kv", "fp8_e4m3"], "ambiguous flag '--kv': it could be --kv-cache-dtype"),
    (BASE + ["--bogus"], "unknown flag '--bogus'"),
    (BASE + ["--kv-cache-dtype", "fp8"], "Valid values: auto, fp8_e5m2, fp8_e4m3"),
    (BASE + ["--kv-cache-dtype", "float16"], "invalid value 'float16'"),
    (BASE + ["--page-size", "big"], "--page-size: expected an integer"),
    (BASE + ["--page-size", "0"], "must be at least 1"),
    (["--platform", "h1000", "--model-arch", "X"], "unknown platform 'h1000'. Did you mean 'h100'?"),
    (["--platform", "auto", "--model-arch", "X"], "name the target GPU"),
    (["--model-arch", "X"], "name the target GPU"),
    (["--platform", "h100", "--model-config", "/nonexistent/config.json"], "no such file: /nonexistent/config.json"),
    (BASE + ["--explain", "kv_cache"], "--explain kv_cache: no such option. Did you mean 'kv_cache_dtype'?"),
    (["--batch", "/nonexistent.jsonl"], "--batch: cannot read /nonexistent.jsonl"),
    (BASE + ["--installed", "flashinfer"], "--installed expects PKG=yes or PKG=no"),
    (["--compute-capability", "7.5", "--model-arch", "X"], "no known nvidia platform has capability 7.5"),
    (["--platform", "h100", "--model-arch", "X", "stray"], "unexpected argument 'stray'"),
])
def test_bad_input_exits_2_with_a_message(argv, needle):
    code, out, err = _cli(argv)
    assert code == 2, (out, err)
    assert needle in err
    assert "Traceback" not in err + out


def test_model_config_not_json_and_directory(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    code, _, err = _cli(["--platform", "h100", "--model-config", str(bad)])
    assert code == 2 and f"{bad} is not valid JSON" in err
    bad.write_text(json.dumps({"architectures": ["DeepseekV32ForCausalLM"], "index_topk": 2048}))
    code, out, _ = _cli(["--platform", "h100", "--model-config", str(tmp_path), "--format", "json"])
    assert code == 0 and json.loads(out)["values"]["attention_backend"] == "dsa"
    bad.write_text("[1, 2]")
    code, _, err = _cli(["--platform", "h100", "--model-config", str(bad)])
    assert code == 2 and "must hold a JSON object" in err


def test_unreadable_model_config(tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    code, _, err = _cli(["--platform", "h100", "--model-config", str(d)])
    assert code == 2 and "no such file" in err and str(d) in err


def test_broken_rule_files_exit_2_with_every_error(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "a.yaml").write_text("schema: resolver/1\nrules:\n"
                                  "  - id: x\n    kind: conflict\n    doc: d\n    when: a <\n    message: m\n"
                                  "  - id: y\n    kind: nope\n    doc: d\n")
    code, _, err = _cli(["--rules", str(rules), "--platform", "h100"])
    assert code == 2
    assert "2 problems in the rule files" in err and "a.yaml:6" in err and "a.yaml:9" in err


def test_deprecated_aliases_are_accepted_and_reported():
    code, out, _ = _cli(BASE + ["--nsa-decode-backend", "flashmla_kv", "--kv-cache-dtype", "fp8_e4m3",
                                "--attention-backend", "nsa", "--format", "json"])
    doc = json.loads(out)
    assert code == 0
    assert doc["values"]["dsa_decode_backend"] == "flashmla_kv" and doc["values"]["attention_backend"] == "dsa"
    assert any("--nsa-decode-backend is deprecated; use --dsa-decode-backend" in w["message"] for w in doc["warnings"])
    assert any("--attention-backend nsa is deprecated" in w["message"] for w in doc["warnings"])


def test_explicit_page_size_adjustment_is_a_warning():
    code, out, _ = _cli(BASE + ["--page-size", "128", "--format", "json", "--explain"])
    doc = json.loads(out)
    assert code == 0 and doc["values"]["page_size"] == 64
    assert doc["derivations"]["page_size"]["source"] == "adjustment"
    assert doc["derivations"]["page_size"]["adjustments"][0]["from"] == 128
    assert any("--page-size=128 was changed to 64 by adjust.dsa.page.cuda" in w["message"] for w in doc["warnings"])
    code, out, _ = _cli(BASE + ["--page-size", "128", "--explain"])
    assert "adjusted 128 -> 64 by adjust.dsa.page.cuda" in out and "warnings:" in out


def test_batch_goes_on_after_bad_lines_and_exits_with_the_worst(tmp_path):
    lines = [
        json.dumps({"id": "ok", "platform": "h100", "model_arch": "DeepseekV32ForCausalLM"}),
        "{not json",
        json.dumps({"id": "conf", "platform": "h100", "model_arch": "DeepseekV32ForCausalLM",
                    "args": {"enable_hisparse": True}}),
        json.dumps({"id": "badval", "platform": "h100", "args": {"kv_cache_dtype": "fp9"}}),
        json.dumps({"id": "noplat", "args": {}}),
        json.dumps(["not", "an", "object"]),
        "",
        json.dumps({"id": "extra", "platform": "h100", "colour": 1}),
        json.dumps({"id": "inst", "platform": "h100", "installed": {"flashinfer": False}}),
    ]
    f = tmp_path / "req.jsonl"
    f.write_text("\n".join(lines) + "\n")
    code, out, err = _cli(["--batch", str(f)])
    results = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in results] == ["ok", None, "conf", "badval", "noplat", None, "extra", "inst"]
    assert [r["status"] for r in results] == ["resolved", "error", "conflict", "error", "error", "error", "error",
                                              "resolved"]
    assert "not valid JSON" in results[1]["error"] and results[1]["line"] == 2
    assert "Valid values" in results[3]["error"]
    assert code == 2
    assert "batch: 2 resolved, 1 conflicted, 5 failed" in err


def test_batch_from_stdin():
    line = json.dumps({"id": "a", "platform": "b200", "model_arch": "DeepseekV32ForCausalLM"})
    code, out, _ = _cli(["--batch", "-"], stdin=line + "\n")
    assert code == 0 and json.loads(out)["values"]["dsa_decode_backend"] == "trtllm"


def test_help_lists_every_option_flag_once(engine):
    code, out, _ = _cli(["--help"])
    assert code == 0
    import re

    for opt in engine.pack.options.values():
        if opt.no_cli:  # a field SGLang derives, with no flag
            assert not opt.flag and f"--{opt.name.replace('_', '-')} " not in out, opt.name
            continue
        if opt.env:  # an environment variable is given with --env NAME=VALUE
            assert not re.findall(rf"^  {re.escape(opt.flag)}(\s|,|$)", out, re.M), opt.flag
            continue
        assert len(re.findall(rf"^  {re.escape(opt.flag)}(\s|,|$)", out, re.M)) == 1, opt.flag


def test_console_entry_points_run_without_traceback():
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-m", "resolver", *SEED_ARGV], capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "resolver", "--platform", "x"], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 2 and proc.stderr.startswith("resolve: error: unknown platform 'x'")


def test_platforms_subcommand_text_and_json():
    code, out, _ = _cli(["platforms"])
    assert code == 0 and "sm90     nvidia  9.0" in out and "h100, h200" in out and "this machine:" in out
    code, out, _ = _cli(["platforms", "--format", "json"])
    doc = json.loads(out)
    assert code == 0 and [p["name"] for p in doc["platforms"]][:2] == ["sm80", "sm86"]
    assert "detected" in doc and "detection_error" in doc
    code, _, err = _cli(["platforms", "--bogus"])
    assert code == 2 and "unrecognized arguments" in err


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    from resolver.explain import Style

    class Tty(io.StringIO):
        def isatty(self):
            return True

    argv = ["--platform", "h100", "--model-arch", "LlamaForCausalLM"]
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    tty = Tty()
    main(argv, tty, io.StringIO())
    assert "\033[" in tty.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    tty = Tty()
    main(argv, tty, io.StringIO())
    assert "\033[" not in tty.getvalue()
    piped = io.StringIO()
    main(argv + ["--color", "never"], piped, io.StringIO())
    assert "\033[" not in piped.getvalue()
    forced = io.StringIO()
    main(argv + ["--color", "always"], forced, io.StringIO())
    assert "\033[" in forced.getvalue()
    assert Style.for_stream(io.StringIO()).width is None  # a pipe is not wrapped: golden files stay stable


def test_text_wraps_to_columns_and_json_keeps_the_root_cause(monkeypatch):
    from .conftest import SEED_ARGV

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    piped = io.StringIO()
    main(SEED_ARGV + ["--explain"], piped, io.StringIO())
    assert max(map(len, piped.getvalue().splitlines())) > 72  # a pipe is not wrapped unless COLUMNS is set
    monkeypatch.setenv("COLUMNS", "72")
    for out in (Tty(), io.StringIO()):  # an explicit COLUMNS wraps a terminal and a pipe alike
        assert main(SEED_ARGV + ["--explain"], out, io.StringIO()) == 1
        assert max(map(len, out.getvalue().splitlines())) <= 72  # the fact trees too
    out = Tty()
    assert main(SEED_ARGV, out, io.StringIO()) == 1
    assert "root cause: you set --dsa-decode-backend tilelang, --enable-hisparse, --kv-cache-dtype" in \
        " ".join(out.getvalue().split())
    out = io.StringIO()
    main(SEED_ARGV + ["--format", "json"], out, io.StringIO())
    first = json.loads(out.getvalue())["conflicts"][0]
    assert first["root_cause"].startswith("you set --dsa-decode-backend tilelang")


def test_a_shared_cause_is_drawn_once():
    from .conftest import SEED_ARGV

    out = io.StringIO()
    main(SEED_ARGV + ["--explain"], out, io.StringIO())
    text = out.getvalue()
    assert text.count("derived by fact.platform.is-cuda") == 1
    assert "platform.is_cuda   = true             derived: see [1]" in text


def test_a_fleet_check_explains_each_failure_and_counts_conflicts_by_rule(tmp_path):
    fleet = tmp_path / "fleet.jsonl"
    fleet.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "llama-h100", "platform": "h100", "model_arch": "LlamaForCausalLM"},
        {"id": "dsv32-5090", "platform": "rtx5090", "model_arch": "DeepseekV32ForCausalLM"},
        {"id": "seed", "platform": "h100", "model_arch": "DeepseekV32ForCausalLM",
         "args": {"kv_cache_dtype": "fp8_e4m3", "enable_hisparse": True, "disable_radix_cache": True,
                  "dsa_decode_backend": "tilelang"}},
    ]))
    out, err = io.StringIO(), io.StringIO()
    assert main(["--batch", str(fleet), "--explain"], out, err) == 1  # a deployment gate: non-zero when any conflicts
    text = err.getvalue()
    assert "llama-h100" not in text  # resolved requests are not explained
    assert "seed: conflict\n  - [conflict.hisparse.decode.cuda-fp8] HiSparse supports" in text
    assert "    fix: remove --dsa-decode-backend (1 more)" in text
    assert "batch: 1 resolved, 2 conflicted, 0 failed" in text
    assert "conflicts by rule:\n" in text and "1 x conflict.hisparse.decode.cuda-fp8" in text


def test_gpus_per_node_is_a_platform_fact(capsys):
    assert main(["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--gpus-per-node", "4", "--format", "json",
                 "--explain"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["facts"]["platform.gpus_per_node"]["value"] == 4
    assert main(["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--gpus-per-node", "0"]) == 2
    assert "--gpus-per-node expects" in capsys.readouterr().err


def test_an_empty_rules_path_is_an_input_error_not_the_shipped_rules():
    code, _, err = _cli(["--rules", "", "--platform", "h100", "--model-arch", "LlamaForCausalLM"])
    assert code == 2 and "--rules: the path is empty" in err and "Traceback" not in err
