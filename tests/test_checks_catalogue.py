"""The checks catalogue: every raise and assert of SGLang 0.5.23's launch resolution, made from the wheel by
tools/sync_checks.py (resolver/data/sglang_checks.json), each mapped to the rules that encode it or to why none
does (resolver/data/checks.yaml); resolver.checks.not_checked names the unmapped ones a launch could trigger."""
from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from collections import defaultdict

import pytest
import yaml

from resolver import checks
from resolver.api import get_engine
from resolver.catalogue import catalogue as flag_table
from resolver.cli import main

from .conftest import ROOT

DATA = os.path.join(ROOT, "resolver", "data")
TOOL = os.path.join(ROOT, "tools", "sync_checks.py")
DEFAULTS = {dest: action.default for dest, action in flag_table().by_dest.items()}


def _shipped() -> dict:
    with open(os.path.join(DATA, "sglang_checks.json"), encoding="utf-8") as fh:
        return json.load(fh)


def _mapping() -> dict:
    with open(os.path.join(DATA, "checks.yaml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _sites_by_function() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for site in _shipped()["sites"]:
        out[f"{site['module']}:{site['function']}"].append(site)
    return out


def _oracle_sglang() -> str:
    """The oracle venv's sglang package directory (found without importing sglang), or a skip; a failure when
    $SGLANG_ORACLE_PYTHON names a Python that cannot give it (tests/oracle.py's policy)."""
    explicit = os.environ.get("SGLANG_ORACLE_PYTHON")
    python = explicit or os.path.join(os.path.dirname(ROOT), ".oracle-venv", "bin", "python")
    probe = ("import importlib.util, os, sys; s = importlib.util.find_spec('sglang'); "
             "sys.exit(1) if s is None else print(os.path.dirname(s.origin))")
    found = None
    if os.path.isfile(python):
        run = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False, timeout=60)
        if run.returncode == 0 and os.path.isdir(os.path.join(run.stdout.strip(), "srt", "arg_groups")):
            found = run.stdout.strip()
    if found is None:
        why = f"no SGLang wheel to read: {python} cannot find the sglang package"
        if explicit:
            pytest.fail(f"SGLANG_ORACLE_PYTHON is set but {why}")
        pytest.skip(why)
    return found


# --- (a) the shipped catalogue is what the tool makes of the wheel --------------------------------------------

def test_shipped_catalogue_is_what_the_tool_makes_of_the_wheel():
    sglang = _oracle_sglang()
    # the oracle's own Python runs the tool: the catalogue's text (ast.unparse) is that release's Python's
    python = os.environ.get("SGLANG_ORACLE_PYTHON") or os.path.join(os.path.dirname(ROOT), ".oracle-venv", "bin",
                                                                      "python")
    run = subprocess.run([python, TOOL, "--sglang", sglang], capture_output=True, text=True, check=False,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    made, shipped = json.loads(run.stdout), _shipped()
    key = lambda s: (s["module"], s["function"], s["handle"])  # noqa: E731
    missing = sorted(set(map(key, made["sites"])) - set(map(key, shipped["sites"])))
    assert not missing, f"sites of the wheel the shipped catalogue lacks (first 10): {missing[:10]}"
    assert made == shipped, ("re-run: python tools/sync_checks.py --sglang SITE-PACKAGES/sglang "
                             "--out resolver/data/sglang_checks.json")


def test_the_catalogue_counts_every_site_of_the_launch_resolution():
    data = _shipped()
    assert data["release"] == "0.5.23"
    pipeline = [s for s in data["sites"] if s["module"] != "srt/configs/model_config.py"]
    # the figures issue 24 measured: 549 raises in 139 functions of arg_groups/** and server_args.py
    assert sum(s["kind"] == "raise" for s in pipeline) == 549
    assert len({(s["module"], s["function"]) for s in pipeline if s["kind"] == "raise"}) == 139
    assert data["counts"]["raise"] + data["counts"]["assert"] == len(data["sites"])
    assert "srt/configs/model_config.py" in data["scanned"]
    assert "ModelConfig._verify_quantization" in data["model_config_functions_reached"]


# --- (b) every raising function is mapped, and only those -----------------------------------------------------

def test_every_raising_function_has_an_entry_and_every_entry_a_function():
    functions = _mapping()["functions"]
    sites = _sites_by_function()
    assert sorted(set(sites) - set(functions)) == [], "raising functions checks.yaml does not map"
    assert sorted(set(functions) - set(sites)) == [], "checks.yaml maps functions the wheel does not have"


def test_every_site_has_a_status_and_every_handle_a_site():
    mapping = _mapping()
    reasons = set(mapping["reasons"])
    assert reasons == set(checks.REASONS)
    sites = _sites_by_function()
    for key, entry in mapping["functions"].items():
        handles = {s["handle"] for s in sites[key]}
        listed = entry.get("sites") or {}
        assert set(listed) <= handles, f"{key}: handles no site has: {sorted(set(listed) - handles)}"
        for handle in handles:
            chosen = listed.get(handle, entry)
            reason = chosen.get("not_modelled")
            assert chosen.get("rules") or reason, f"{key} [{handle}]: neither rules nor a reason"
            if reason:
                code = reason.split(":", 1)[0]
                assert code in reasons, f"{key} [{handle}]: unknown reason code {code!r}"
                assert ": " in reason, f"{key} [{handle}]: say why after the code"
                assert (code == "partial") == bool(chosen.get("rules")), \
                    f"{key} [{handle}]: rules beside a reason only for a partial check"
    assert all(c.status == "modelled" or c.reason for c in checks.catalogue())


# --- (c) every rule named exists ------------------------------------------------------------------------------

def test_every_rule_the_mapping_names_is_in_the_shipped_pack():
    pack = get_engine().pack
    named = {rule for c in checks.catalogue() for rule in c.rules}
    unknown = []
    for rule_id in sorted(named):
        try:
            pack.rule(rule_id)
        except KeyError:
            unknown.append(rule_id)
    assert not unknown
    assert len(named) > 150


def test_every_conflict_rule_citing_a_catalogued_function_is_mapped_there():
    """A rule whose evidence names a raising function (``sglang 0.5.23 srt/arg_groups/x.py func``) is listed by
    one of that function's sites, or under unsited_rules: a rule added for a check updates the mapping."""
    every = checks.catalogue()
    mapped: dict[str, set[str]] = defaultdict(set)
    by_name: dict[tuple[str, str], set[str]] = defaultdict(set)
    for c in every:
        mapped[c.id].update(c.rules)
        by_name[(c.module, c.function.rsplit(".", 1)[-1])].add(c.id)
    unsited = _mapping().get("unsited_rules") or {}
    pack = get_engine().pack
    for rule_id in unsited:
        pack.rule(rule_id)  # KeyError for a stale entry
    stray = []
    for conflict in pack.conflicts:
        cited = set()
        for m in re.finditer(r"(srt/[\w/]+\.py)((?:[ ,]+[A-Za-z_][\w.]*)+)", conflict.evidence or ""):
            for name in re.findall(r"[A-Za-z_][\w.]*", m.group(2)):
                cited |= by_name.get((m.group(1), name.rsplit(".", 1)[-1]), set())
        if cited and not any(conflict.ref.id in mapped[f] for f in cited) and conflict.ref.id not in unsited:
            stray.append((conflict.ref.id, sorted(cited)))
    assert not stray, f"conflict rules citing a function whose checks.yaml entry does not list them: {stray}"


# --- (d) not_checked ------------------------------------------------------------------------------------------
# On a small catalogue of its own, so the examples stay what they are while rules are added to the real one.

def _site(handle, guard, fields, env=()):
    return {"module": "srt/arg_groups/example.py", "function": "check", "line": len(handle), "kind": "raise",
            "exception": "ValueError", "message": handle,
            "reads": {"fields": list(fields), "model": [], "env": list(env), "fields_from": "guard"},
            "guard": guard, "handle": handle}


EXAMPLE_SITES = [
    _site("priority", ["and", ["field", "enable_priority_scheduling"],
                       ["not", ["cmp", "in", ["field", "schedule_policy"], ["const", ["fcfs", "lof"]]]]],
          ["enable_priority_scheduling", "schedule_policy"]),
    _site("divisible", ["and", ["cmp", ">", ["field", "attn_cp_size"], ["const", 1]],
                        ["not", ["cmp", "==", ["bin", "%", ["field", "tp_size"], ["field", "attn_cp_size"]],
                                 ["const", 0]]]], ["attn_cp_size", "tp_size"]),
    _site("staging", ["and", ["cmp", "in", ["field", "disaggregation_mode"], ["const", ["prefill", "decode"]]],
                      ["env", "SGLANG_STAGING", "bool", False],
                      ["not", ["cmp", "in", ["field", "disaggregation_transfer_backend"],
                               ["const", ["mooncake", "nixl"]]]]],
          ["disaggregation_mode", "disaggregation_transfer_backend"], ["SGLANG_STAGING"]),
    _site("nemotron", ["and", ["cmp", "==", ["model", "model_type"], ["const", "nemotron_h"]],
                       ["cmp", ">", ["field", "attn_cp_size"], ["const", 1]]], ["attn_cp_size"]),
    _site("blackwell", ["and", ["cmp", "==", ["field", "quantization"], ["const", "nvfp4_online"]],
                        ["not", ["platform", "is_sm100"]]], ["quantization"]),
    _site("modelled", ["field", "enable_lmcache"], ["enable_lmcache"]),
    _site("xpu", ["cmp", "==", ["field", "device"], ["const", "xpu"]], ["device"]),
    _site("model only", ["cmp", "==", ["arch"], ["const", "LlamaForCausalLM"]], []),
    _site("opaque", ["and", None, ["cmp", ">", ["field", "tp_size"], ["const", 0]]], ["tp_size"]),
]
EXAMPLE_MAPPING = {"functions": {"srt/arg_groups/example.py:check": {
    "not_modelled": "not-yet: examples",
    "sites": {"modelled": {"rules": ["conflict.lmcache.hicache"]},
              "xpu": {"not_modelled": "other-platform: an Intel XPU example"}}}}}


@pytest.fixture
def example_catalogue(monkeypatch):
    data = {"release": "0.0.0", "sites": EXAMPLE_SITES, "derived_fields": ["device"]}

    def clear():
        for cached in (checks._data, checks.catalogue, checks._index, checks._derived):
            cached.cache_clear()
    clear()
    monkeypatch.setattr(checks, "_data", lambda: (data, EXAMPLE_MAPPING))
    yield
    monkeypatch.undo()
    clear()


LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}


def _named(typed, decided=None, env=None, model=LLAMA, platform=None):
    decided = dict(typed if decided is None else decided)
    return tuple(c.site for c in checks.not_checked(typed, decided, DEFAULTS, env=env, model=model,
                                                    platform=platform))


def test_a_typed_field_a_not_modelled_check_reads_names_it(example_catalogue):
    assert _named({"enable_priority_scheduling": True, "schedule_policy": "lpm"}) == ("priority",)
    check = checks.not_checked({"schedule_policy": "lpm", "enable_priority_scheduling": True}, {}, DEFAULTS)[0]
    assert (check.id, check.status, check.reason_code) == ("srt/arg_groups/example.py:check", "not-modelled",
                                                           "not-yet")


def test_a_decided_field_names_a_check_only_away_from_sglangs_default(example_catalogue):
    assert _named({}, {"enable_priority_scheduling": True, "schedule_policy": "lpm"}) == ("priority",)
    assert _named({}) == ()
    assert _named({}, {"schedule_policy": DEFAULTS["schedule_policy"], "enable_priority_scheduling": False}) == ()


def test_a_check_whose_guard_the_launch_fails_is_not_named(example_catalogue):
    assert _named({"enable_priority_scheduling": True, "schedule_policy": "fcfs"}) == ()
    assert _named({"tp_size": 6, "attn_cp_size": 4}) == ("divisible",)
    assert _named({"tp_size": 8, "attn_cp_size": 4}) == ()


def test_an_unknown_guard_the_launch_does_not_move_names_nothing(example_catalogue):
    # "opaque" reads tp_size, but the rest of its guard is unknown both with and without the launch
    assert "opaque" not in _named({"tp_size": 8})


def test_modelled_and_never_triggered_checks_are_not_named(example_catalogue):
    assert _named({"enable_lmcache": True, "device": "xpu"}) == ()
    assert _named({}, model={"architectures": ["LlamaForCausalLM"]}) == ()  # a check of the model alone


def test_an_environment_variable_set_in_the_launch_names_the_checks_that_read_it(example_catalogue):
    typed = {"disaggregation_mode": "prefill", "disaggregation_transfer_backend": "mori"}
    assert _named(typed, env={"SGLANG_STAGING": "1"}) == ("staging",)
    assert _named(typed, env={"SGLANG_STAGING": "0"}) == ()
    assert _named(typed) == ()  # unset: SGLang's default (off)


def test_the_model_config_and_the_platform_settle_their_guards(example_catalogue):
    nemotron = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h"}
    assert "nemotron" in _named({"attn_cp_size": 2, "tp_size": 2}, model=nemotron)
    assert "nemotron" not in _named({"attn_cp_size": 2, "tp_size": 2})
    assert "nemotron" in _named({"attn_cp_size": 2, "tp_size": 2}, model=None)  # an unknown model may be one
    typed = {"quantization": "nvfp4_online"}
    assert _named(typed, platform=checks.platform_facts("nvidia", 9, 0)) == ("blackwell",)
    assert _named(typed, platform=checks.platform_facts("nvidia", 10, 0)) == ()


def test_not_checked_is_deterministic_and_in_catalogue_order(example_catalogue):
    typed = {"tp_size": 6, "attn_cp_size": 4, "enable_priority_scheduling": True, "schedule_policy": "lpm",
             "quantization": "nvfp4_online"}
    first = _named(typed)
    assert first == _named(dict(reversed(list(typed.items())))) == ("priority", "divisible", "blackwell")


def test_not_checked_on_the_shipped_catalogue():
    assert checks.not_checked({}, {}, DEFAULTS) == ()
    typed = {"tp_size": 8, "enable_kv_cache_sharding": True, "disaggregation_mode": "decode"}
    named = checks.not_checked(typed, typed, DEFAULTS, platform=checks.platform_facts("nvidia", 9, 0))
    assert named == checks.not_checked(dict(reversed(list(typed.items()))), typed, DEFAULTS,
                                       platform=checks.platform_facts("nvidia", 9, 0))
    assert all(c.status == "not-modelled" and c.reason_code not in ("other-platform", "unreachable-from-flags")
               for c in named)
    order = {(c.id, c.site): i for i, c in enumerate(checks.catalogue())}
    assert [order[(c.id, c.site)] for c in named] == sorted(order[(c.id, c.site)] for c in named)


def test_every_check_is_a_record_with_its_reads():
    every = checks.catalogue()
    assert len(every) == len(_shipped()["sites"])
    assert len({(c.id, c.site) for c in every}) == len(every)  # the handles tell a function's sites apart
    check = next(c for c in every if c.function == "ModelConfig._derive_context_length")
    assert check.id == "srt/configs/model_config.py:ModelConfig._derive_context_length"
    assert "context_length" in check.fields
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN" in check.env
    assert check.to_dict()["reads"]["env"] == ["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"]


def test_coverage_adds_up():
    cov = checks.coverage()
    f, s = cov["functions"], cov["sites"]
    assert f["total"] == len(_mapping()["functions"])
    assert f["modelled"] + f["partly"] + f["not_modelled"] == f["total"]
    assert sum(f["not_modelled_by_reason"].values()) == f["not_modelled"]
    assert s["modelled"] + s["not_modelled"] == s["total"] == s["raise"] + s["assert"]
    assert sum(s["not_modelled_by_reason"].values()) == s["not_modelled"]
    assert sum(m["sites"]["total"] for m in cov["modules"].values()) == s["total"]


# --- (e) resolve checks ---------------------------------------------------------------------------------------

def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    return main(["checks", *argv], out, err), out.getvalue(), err.getvalue()


def test_resolve_checks_prints_coverage_per_module():
    status, out, _ = _run()
    assert status == 0
    assert out.startswith("SGLang 0.5.23 launch checks: ")
    assert "srt/arg_groups/parallel_hook.py" in out and "\ntotal " in out and "not-yet" in out


def test_resolve_checks_json_is_the_whole_catalogue_with_status():
    status, out, _ = _run("--format", "json")
    assert status == 0
    data = json.loads(out)
    assert len(data["checks"]) == len(checks.catalogue())
    assert {c["status"] for c in data["checks"]} == {"modelled", "not-modelled"}
    assert data["coverage"]["sites"]["total"] == len(data["checks"])


def test_resolve_checks_filters_by_function_or_module():
    status, out, _ = _run("handle_context_parallelism")
    assert status == 0
    assert "srt/arg_groups/parallel_hook.py:handle_context_parallelism" in out
    assert "conflict.parallel.prefill-cp-hip" in out and "tp_size must be divisible by attn_cp_size" in out
    status, out, _ = _run("parallel_hook", "--format", "json")
    assert status == 0
    assert {c["check"].split(":")[0] for c in json.loads(out)["checks"]} == {"srt/arg_groups/parallel_hook.py"}


def test_resolve_checks_refuses_an_unknown_name():
    status, _, err = _run("parallel_hok")
    assert status == 2
    assert "did you mean 'parallel_hook'" in err


# --- the generator's heuristics, on a small tree ---------------------------------------------------------------

def _tool():
    if "sync_checks" not in sys.modules:  # registered before it runs: its dataclasses look their module up
        spec = importlib.util.spec_from_file_location("sync_checks", TOOL)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["sync_checks"] = module
        spec.loader.exec_module(module)
    return sys.modules["sync_checks"]


def test_the_generator_reads_guards_messages_and_callers(tmp_path):
    files = {
        "_version.py": "__version__ = version = '9.9.9'\n",
        "srt/environ.py": "class Envs:\n    SGLANG_FLAG = EnvBool(False)\n",
        "srt/runtime_context.py": "",
        "srt/arg_groups/fields/parallel.py": "class Parallel:\n    tp_size: int = 1\n    pp_size: int = 1\n"
                                             "    enable_thing: bool = False\n    model_path: str = None\n",
        "srt/arg_groups/hook.py": textwrap.dedent('''
            LIMITS = ("a", "b")

            def handle_thing(server_args):
                cfg = resolving_view(server_args)
                if not cfg.enable_thing:
                    return
                if cfg.tp_size % 2:
                    raise ValueError(f"tp {cfg.tp_size} is odd")
                _helper(cfg.pp_size)
                assert cfg.pp_size in LIMITS, "pp must be a or b"

            def _helper(size):
                if size > 4 and envs.SGLANG_FLAG.get():
                    raise RuntimeError("too many stages")
        '''),
        "srt/server_args.py": "",
        "srt/configs/model_config.py": textwrap.dedent('''
            class ModelConfig:
                def __init__(self, quantization=None):
                    self.quantization = quantization
                    self._verify()

                @staticmethod
                def from_server_args(server_args):
                    return ModelConfig(quantization=server_args.quantization)

                def _verify(self):
                    if self.quantization == "bad":
                        raise ValueError("bad quantization")
        '''),
    }
    for path, text in files.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (tmp_path / "srt/arg_groups/fields/parallel.py").write_text(
        files["srt/arg_groups/fields/parallel.py"] + "    quantization: str = None\n")
    made = _tool().catalogue(str(tmp_path))
    assert made["release"] == "9.9.9"
    by_message = {s["message"]: s for s in made["sites"]}
    odd = by_message["tp {cfg.tp_size} is odd"]
    assert odd["function"] == "handle_thing" and odd["kind"] == "raise" and odd["exception"] == "ValueError"
    assert odd["reads"]["fields"] == ["enable_thing", "tp_size"]
    assert odd["guard"] == ["and", ["not", ["not", ["field", "enable_thing"]]],
                            ["bin", "%", ["field", "tp_size"], ["const", 2]]]
    stages = by_message["too many stages"]
    # a helper's parameter stands for what its caller passes; its guard starts with the caller's conditions
    assert stages["reads"]["fields"] == ["pp_size"] and stages["reads"]["env"] == ["SGLANG_FLAG"]
    assert stages["guard"] == ["and", ["not", ["not", ["field", "enable_thing"]]],
                               ["cmp", ">", ["field", "pp_size"], ["const", 4]], ["env", "SGLANG_FLAG", "bool", False]]
    limits = by_message["pp must be a or b"]
    assert limits["kind"] == "assert" and limits["guard"][-1] == ["not", ["cmp", "in", ["field", "pp_size"],
                                                                           ["const", ["a", "b"]]]]
    quant = by_message["bad quantization"]
    assert quant["function"] == "ModelConfig._verify" and quant["reads"]["fields"] == ["quantization"]
    assert [s["handle"] for s in made["sites"]] == [s["handle"] for s in sorted(
        made["sites"], key=lambda s: (s["module"], s["line"]))]
    assert made == _tool().catalogue(str(tmp_path))  # deterministic


def test_the_generator_runs_as_a_script(tmp_path):
    status = subprocess.run([sys.executable, TOOL, "--sglang", str(tmp_path)], capture_output=True, text=True,
                            check=False, timeout=60)
    assert status.returncode == 2 and "not an sglang package directory" in status.stderr
