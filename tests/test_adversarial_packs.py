"""Adversarial rule packs (``--rules DIR``) and inputs: every kind is exit 2 with a message, within seconds.

Each kind of pack that once ended in an internal error (exit 3) or ran past a minute is built here
in a temporary folder beside the shipped ``options.yaml``.  Packs that are refused early run
in-process (``main``); those that would hang or exhaust memory if a cap regressed run in a child
process under a timeout and a 1 GiB address-space limit, so a regression fails the test instead of
the machine running it.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from resolver import ConflictError, InputError, loader, resolve
from resolver.cli import build_parser, main
from resolver.conditions import MAX_BRANCHES, MAX_EXPRESSION_CHARS, MAX_EXPRESSION_DEPTH
from resolver.errors import RuleFileErrors
from resolver.loader import (
    MAX_PACK_BYTES,
    MAX_PACK_CHARS,
    MAX_PACK_FILES,
    MAX_TEMPLATE_WIDTH,
    MAX_YAML_NODES,
    RESOLVER_FLAGS,
    default_rules_dir,
    load_rules,
)

from .conftest import ROOT

BASE = ["--platform", "h100", "--model-arch", "DeepseekV32ForCausalLM"]

# the CLI under a 1 GiB address-space limit (a resolution needs under 512 MiB)
_LIMITED = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30)); "
            "sys.argv = ['resolve', *sys.argv[1:]]; runpy.run_module('resolver', run_name='__main__')")


def _pack(tmp_path: Path, files: dict[str, str]) -> str:
    """A rules directory: the shipped options.yaml (so rules can name real options) and ``files``."""
    directory = tmp_path / "rules"
    directory.mkdir(exist_ok=True)
    shutil.copy(os.path.join(default_rules_dir(), "options.yaml"), directory / "options.yaml")
    for name, text in files.items():
        (directory / name).write_text(text)
    return str(directory)


def _cli(argv: list[str]) -> tuple[int, str, float]:
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    code = main(argv, out, err)
    return code, err.getvalue(), time.monotonic() - start


def _bounded_cli(argv: list[str], timeout: float = 20) -> tuple[int, str, float]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _LIMITED, *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, check=False, env={**os.environ, "LAUNCH_RESOLVER_CACHE": "off"})
    return proc.returncode, proc.stderr, time.monotonic() - start


def _refused(tmp_path: Path, files: dict[str, str], needle: str, bounded: bool = False) -> str:
    """Run the CLI on the pack; assert exit 2, ``needle`` in the message, no traceback, a few seconds."""
    directory = _pack(tmp_path, files)
    code, err, took = (_bounded_cli if bounded else _cli)(["--rules", directory, *BASE])
    assert code == 2, err[-2000:]
    assert needle in err, err[-2000:]
    assert "Traceback" not in err and "internal error" not in err
    assert took < 10, f"took {took:.1f}s"
    return err


def _rule(kind: str = "conflict", when: str = "page_size == 1", message: str = "m", extra: str = "") -> str:
    return textwrap.dedent(f"""\
        schema: resolver/1
        rules:
          - id: {kind}.adversarial
            kind: {kind}
            doc: An adversarial rule.
            when: {json.dumps(when)}
            message: {json.dumps(message)}
        """) + extra


def _option(flag: str, aliases: list[str] | None = None, name: str = "adversarial_switch") -> str:
    text = textwrap.dedent(f"""\
        schema: resolver/1
        rules:
          - id: option.adversarial
            kind: option
            doc: An adversarial option.
            name: {name}
            flag: {flag}
            type: bool
            help: A switch.
        """)
    return text + (f"    aliases: {json.dumps(aliases)}\n" if aliases else "")


# --- when: expressions ---

@pytest.mark.parametrize("when, needle", [
    ("not " * 20_000 + "page_size == 1", f"characters long (the limit is {MAX_EXPRESSION_CHARS})"),
    ("not " * 2_000 + "page_size == 1", f"'when' is nested more than {MAX_EXPRESSION_DEPTH} levels deep"),
    ("(page_size == 1 and " * 300 + "page_size == 2" + ")" * 300, "'when' is nested more than"),
    ("(page_size == 1 or (page_size == 3 and " * 150 + "page_size == 2" + "))" * 150, "'when' is nested more than"),
    ("(" * 300 + "page_size == 1" + ")" * 300, "too many nested parentheses"),
], ids=["20000-nots", "2000-nots", "300-nested-and", "300-nested-and-or", "300-parentheses"])
def test_a_deep_or_long_when(tmp_path, when, needle):
    _refused(tmp_path, {"deep.yaml": _rule(when=when)}, needle)


def test_a_when_whose_normal_form_explodes(tmp_path):
    # 24 two-way choices: 2**24 branches if expanded; refused from a count, before anything is expanded
    when = " and ".join(f"(page_size == {i} or page_size == {i + 100})" for i in range(24))
    _refused(tmp_path, {"dnf.yaml": _rule(when=when)}, f"expands to more than {MAX_BRANCHES} alternatives",
             bounded=True)


def test_a_part_that_explodes_beside_false_is_refused_too(tmp_path):
    # 'false' would discard the product, but expanding it first is what must not happen
    when = " and ".join(f"(page_size == {i} or page_size == {i + 100})" for i in range(24)) + " and false"
    _refused(tmp_path, {"dnf.yaml": _rule(when=when)}, "alternatives", bounded=True)


def test_the_normal_form_at_the_cap_loads(tmp_path):
    when = " and ".join(f"(page_size == {i} or page_size == {i + 100})" for i in range(6))  # 2**6 == 64
    directory = _pack(tmp_path, {"dnf.yaml": _rule(when=when)})
    assert len(load_rules(directory).conflicts[0].when.branches) == MAX_BRANCHES


@pytest.mark.parametrize("when, needle", [
    ("page_size == nan", "unknown fact or option 'nan'"),
    ("page_size > 1e400", "expected a finite number, got inf"),
    ("page_size in [1, -1e400]", "expected a finite number, got -inf"),
    ("page_size > 1.5e300", "outside what the resolver handles"),
    ("page_size > 1e-7", "outside what the resolver handles"),
], ids=["nan", "inf", "minus-inf-in-list", "float-exponent", "tiny-exponent"])
def test_nan_and_float_exponents_in_a_when(tmp_path, when, needle):
    _refused(tmp_path, {"numbers.yaml": _rule(when=when)}, needle)


@pytest.mark.parametrize("value, needle", [
    ("-" * 20_000 + "page_size", "characters long"),
    ("-" * 2_000 + "page_size", "'value' is nested more than"),
    ("page_size * 1e-7", "outside what the resolver handles"),
], ids=["20000-minus", "2000-minus", "float-exponent"])
def test_a_deep_or_bad_computed_value(tmp_path, value, needle):
    text = ("schema: resolver/1\nrules:\n  - id: compute.adversarial\n    kind: compute\n    doc: d\n"
            f"    name: adversarial.value\n    value: {json.dumps(value)}\n")
    _refused(tmp_path, {"compute.yaml": text}, needle)


def test_a_long_when_is_shown_cut_around_its_caret(tmp_path):
    err = _refused(tmp_path, {"long.yaml": _rule(when="not " * 20_000 + "page_size == 1")}, "characters long")
    assert max(len(line) for line in err.splitlines()[2:]) < 150


# --- message templates ---

@pytest.mark.parametrize("message, needle", [
    ("{page_size!z}", "has the conversion '!z'; only !r, !s and !a exist"),
    ("{page_size:999999999}", f"has a width of 999999999; the limit is {MAX_TEMPLATE_WIDTH}"),
    ("{page_size:>999999999}", "has a width of 999999999"),
    ("{page_size:.99999}", "has a precision of 99999"),
    ("{page_size:{kv_cache_dtype}}", "has the format '{kv_cache_dtype}'"),
    ("{page_size:d}", "has the format 'd'"),
    ("{page_size", "bad message template"),
], ids=["conversion", "width", "aligned-width", "precision", "nested", "int-format", "unclosed"])
def test_a_message_template_that_would_fail_or_blow_up(tmp_path, message, needle):
    _refused(tmp_path, {"template.yaml": _rule(message=message)}, needle)


def test_an_adjustment_message_template_is_checked_too(tmp_path):
    text = ("schema: resolver/1\nrules:\n  - id: adjust.adversarial\n    kind: adjust\n    doc: d\n"
            "    option: page_size\n    value: 64\n    order: 1\n    message: '{old:99999999}'\n")
    _refused(tmp_path, {"adjust.yaml": text}, "has a width of 99999999")


def test_a_bounded_format_renders(tmp_path):
    directory = _pack(tmp_path, {"ok.yaml": _rule(message="[{page_size!r:>6.4}]")})
    with pytest.raises(ConflictError) as info:
        resolve({}, platform="h100", model_arch="DeepseekV32ForCausalLM", rules=directory)
    assert [c.message for c in info.value.conflicts] == ["[   '1']"]


# --- option flags ---

@pytest.mark.parametrize("flag, aliases, needle", [
    ("--platform", None, "its flag --platform is a flag of the resolver itself"),
    ("--help", None, "its flag --help is a flag of the resolver itself"),
    ("--adversarial-switch", ["--rules"], "its alias --rules is a flag of the resolver itself"),
    ("--page-size", None, "its flag --page-size already belongs to option 'page_size'"),
    ("--adversarial-switch", ["--kv-cache-dtype"], "its alias --kv-cache-dtype already belongs to option"),
    ("--served-model-name", None, "its flag --served-model-name is SGLang's flag for served_model_name"),
    ("--adversarial-switch", ["--old-switch", "--old-switch"], "--old-switch is given twice"),
    ("--adversarial-switch", ["--adversarial-switch"], "--adversarial-switch is given twice"),
], ids=["platform", "help", "rules-alias", "another-option", "another-option-alias", "sglang-flag", "duplicate-alias",
        "alias-is-flag"])
def test_an_option_flag_that_collides(tmp_path, flag, aliases, needle):
    _refused(tmp_path, {"flag.yaml": _option(flag, aliases)}, needle)


@pytest.mark.parametrize("name", ["format", "rules", "platform", "help"])
def test_an_option_named_like_a_resolver_flag(tmp_path, name):
    # argparse would store the option and the resolver's own flag in one attribute
    _refused(tmp_path, {"name.yaml": _option("--adversarial-switch", name=name)},
             f"option '{name}': the name is the resolver's own --{name}; choose another")


def test_two_new_options_with_one_flag(tmp_path):
    files = {"a.yaml": _option("--adversarial-switch"),
             "b.yaml": _option("--adversarial-switch", name="other_switch").replace("option.adversarial",
                                                                                     "option.other")}
    _refused(tmp_path, files, "its flag --adversarial-switch already belongs to option 'adversarial_switch' (")


def test_the_reserved_flags_are_the_command_lines_own():
    # the loader's list must follow resolver/cli.py: every flag of the parser that is no option's
    pack = load_rules()
    option_flags = {f for o in pack.options.values() for f in (o.flag, *o.aliases)}
    parser = build_parser(pack)
    own = {f for action in parser._actions for f in action.option_strings
           if action.dest not in pack.options and not any(f in a.flags for a in _catalogue_actions())}
    assert own - option_flags == set(RESOLVER_FLAGS)


def _catalogue_actions():
    from resolver.catalogue import catalogue

    return catalogue().actions


def test_a_new_option_with_a_flag_of_its_own_loads(tmp_path):
    directory = _pack(tmp_path, {"ok.yaml": _option("--adversarial-switch", ["--old-adversarial-switch"])})
    code, err, _ = _cli(["--rules", directory, *BASE, "--old-adversarial-switch"])
    assert code == 0, err


# --- values the engine cannot hold ---

@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "1.0e+400"])
@pytest.mark.parametrize("where", ["fixes", "allowed"])
def test_nan_and_inf_in_fixes_and_allowed(tmp_path, value, where):
    option = "disaggregation_decode_host_receive_threshold"
    extra = (f"    fixes:\n      - description: d\n        set: {{{option}: {value}}}\n" if where == "fixes"
             else f"    option: {option}\n    allowed: [{value}]\n")
    _refused(tmp_path, {"values.yaml": _rule(extra=extra)}, "expected a finite number")


# --- YAML: aliases, nesting, size ---

def _laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("where", ["rules", "doc", "set", "fixes"])
def test_a_billion_laughs(tmp_path, where):
    bomb = _laughs()
    text = {
        "rules": bomb + "schema: resolver/1\nrules: *a8\n",
        "doc": bomb + "schema: resolver/1\ndoc: *a8\nrules: []\n",
        "set": bomb + "schema: resolver/1\nrules:\n  - {id: default.x, kind: default, doc: d, priority: 1, set: *a8}\n",
        "fixes": bomb + ("schema: resolver/1\nrules:\n"
                         "  - {id: conflict.x, kind: conflict, doc: d, when: page_size == 1, message: m, "
                         "fixes: *a8}\n"),
    }[where]
    _refused(tmp_path, {"laughs.yaml": text}, f"expands to more than {MAX_YAML_NODES} YAML nodes", bounded=True)


def test_a_long_string_aliased_into_every_rule(tmp_path):
    # 700 KB of text, 3,000 times: 2 GB for the schema's patterns to read
    text = ("schema: resolver/1\nbig: &big '" + "x" * 700_000 + "'\nrules:\n"
            + "".join(f"  - {{id: conflict.f-{j}, kind: conflict, doc: *big, when: page_size == 1, message: *big}}\n"
                      for j in range(3000)))
    _refused(tmp_path, {"strings.yaml": text}, f"more than {MAX_PACK_CHARS // 2**20} MiB of text", bounded=True)


def test_a_file_of_too_many_nodes(tmp_path):
    text = "schema: resolver/1\nrules: [" + "1, " * MAX_YAML_NODES + "]\n"
    _refused(tmp_path, {"nodes.yaml": text}, f"the file expands to more than {MAX_YAML_NODES} YAML nodes")


def test_files_of_too_many_nodes_together(tmp_path, monkeypatch):
    # each file alone is under its cap, the pack is not: refused before any file is schema-checked
    # (a smaller pack cap keeps the test fast; the count is the same code at any cap)
    monkeypatch.setattr(loader, "MAX_PACK_NODES", 3_000)
    part = "schema: resolver/1\nrules: [" + "1, " * 1_000 + "]\n"
    _refused(tmp_path, {f"part{i}.yaml": part for i in range(3)},
             "part2.yaml:0: with this file the rule files expand to more than 3000 YAML nodes")


def test_aliases_nesting_past_the_cap(tmp_path):
    # each anchor nests 20 levels; an alias of one inside another nests 40
    deep = "[" * 20 + "1" + "]" * 20
    text = f"schema: resolver/1\na: &a {deep}\nrules: " + "[" * 20 + "*a" + "]" * 20 + "\n"
    _refused(tmp_path, {"deep.yaml": text}, "the YAML nests more than 32 levels deep")


def test_yaml_nested_too_deeply(tmp_path):
    _refused(tmp_path, {"deep.yaml": "schema: resolver/1\nrules: " + "[" * 900 + "]" * 900 + "\n"},
             "the YAML nests more than 32 levels deep")


@pytest.mark.parametrize("number", ["9" * 5000, "1:" * 3000 + "1"], ids=["5000-digits", "sexagesimal"])
def test_a_yaml_integer_of_thousands_of_digits(tmp_path, number):
    # Python's int() refuses past 4,300 digits with a bare ValueError
    text = ("schema: resolver/1\nrules:\n"
            f"  - {{id: default.x, kind: default, doc: d, set: {{page_size: 1}}, priority: {number}}}\n")
    _refused(tmp_path, {"int.yaml": text}, "int.yaml:3: YAML error: an integer of")


def test_a_30_mb_pack(tmp_path):
    directory = _pack(tmp_path, {})
    for i in range(30):
        with open(os.path.join(directory, f"big{i}.yaml"), "wb") as fh:
            fh.truncate(2**20 - 1)  # sparse: each under the file cap, together far over the pack's
    code, err, took = _cli(["--rules", directory, *BASE])
    assert code == 2 and f"a rule pack may hold at most {MAX_PACK_BYTES // 2**20} MiB" in err and took < 5
    # the loader counts what it reads too (docgen and lint call it without get_engine's stat check)
    start = time.monotonic()
    with pytest.raises(RuleFileErrors, match="a rule pack may hold at most"):
        load_rules(directory)
    assert time.monotonic() - start < 5


def test_too_many_files(tmp_path):
    directory = _pack(tmp_path, {f"f{i:03}.yaml": "schema: resolver/1\nrules: []\n" for i in range(MAX_PACK_FILES)})
    code, err, _ = _cli(["--rules", directory, *BASE])
    assert code == 2
    assert f"{MAX_PACK_FILES + 1} rule files (*.yaml); a rule pack may have at most {MAX_PACK_FILES}" in err
    with pytest.raises(RuleFileErrors, match="a rule pack may have at most"):
        load_rules(directory)


def test_a_symlink_to_dev_zero(tmp_path):
    directory = _pack(tmp_path, {})
    os.symlink("/dev/zero", os.path.join(directory, "zero.yaml"))
    code, err, took = _cli(["--rules", directory, *BASE])
    assert code == 2 and "zero.yaml:0: cannot read: not a regular file (a character device)" in err and took < 5


def test_a_symlink_loop(tmp_path):
    directory = _pack(tmp_path, {})
    os.symlink("loop.yaml", os.path.join(directory, "loop.yaml"))
    code, err, _ = _cli(["--rules", directory, *BASE])
    assert code == 2 and "loop.yaml:0: cannot read: Too many levels of symbolic links" in err


def test_a_fifo_in_the_pack(tmp_path):
    directory = _pack(tmp_path, {})
    os.mkfifo(os.path.join(directory, "fifo.yaml"))
    code, err, took = _bounded_cli(["--rules", directory, *BASE])
    assert code == 2 and "fifo.yaml:0: cannot read: not a regular file (a FIFO)" in err and took < 10


def test_the_shipped_pack_is_well_within_the_caps():
    # a cap the shipped rules approach would refuse them one day: keep a margin of two
    total = sum(os.path.getsize(os.path.join(default_rules_dir(), f)) for f in os.listdir(default_rules_dir())
                if f.endswith(".yaml"))
    assert total < MAX_PACK_BYTES / 2
    pack = load_rules()
    longest = max(len(c.when.source) for c in [*pack.conflicts, *pack.defaults, *pack.adjusts, *pack.facts.values()])
    assert longest < MAX_EXPRESSION_CHARS / 2


# --- NUL bytes and invalid UTF-8: the API and batch lines ---

def test_a_nul_byte_in_rules_and_model_via_the_cli_and_the_api():
    code, err, _ = _cli(["--rules", "\x00", *BASE])
    assert code == 2 and "--rules: the path '\\x00' contains a NUL byte" in err
    code, err, _ = _cli(["--platform", "h100", "--model-config", "\x00"])
    assert code == 2 and "contains a NUL byte" in err
    with pytest.raises(InputError, match="contains a NUL byte"):
        resolve({}, platform="h100", model="\x00")
    with pytest.raises(InputError, match="--rules: expected a path, got int"):
        resolve({}, platform="h100", rules=5)  # type: ignore[arg-type]


def test_batch_lines_that_are_not_utf8(tmp_path):
    requests = tmp_path / "requests.jsonl"
    ok = json.dumps({"id": "ok", "platform": "h100", "model_arch": "DeepseekV32ForCausalLM"}).encode()
    lines = [b'{"id": 1, "platform": "h100", "args": {"served_model_name": "\xc3"}}',
             b'{"id": 2, "platform": "h100", "env": {"A\xff": "1"}}',
             b'{"id": 3, "platform": "h100", "model_arch": "\\ud800"}', ok]
    requests.write_bytes(b"\n".join(lines) + b"\n")
    out, err = io.StringIO(), io.StringIO()
    code = main(["--batch", str(requests)], out, err)
    results = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 2 and "Traceback" not in err.getvalue()
    assert [r["status"] for r in results] == ["error", "error", "error", "resolved"]
    assert results[0]["error"] == f"the line is not UTF-8 text (byte 0xc3 at column {lines[0].index(0xc3) + 1})"
    assert results[0]["line"] == 1
    assert results[1]["error"] == f"the line is not UTF-8 text (byte 0xff at column {lines[1].index(0xff) + 1})"
    assert results[2]["error"] == ("a string of the request is not valid Unicode text "
                                   "(it holds the lone surrogate U+D800)")
    assert not any(r.get("internal") for r in results)
