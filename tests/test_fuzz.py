"""Fuzzing: rule files, batch lines and command lines of any shape.  Only ResolverError subclasses
escape (with a message), the command line exits 0/1/2 (never 3, an internal error), and a rule pack
can never make the resolver import or run anything."""
import io
import json
import os
import shutil
import sys

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from resolver.api import get_engine
from resolver.cli import main
from resolver.errors import ResolverError
from resolver.loader import load_rules
from resolver.tools.batch import resolve_line

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                            st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                           max_leaves=8)
KEYS = ["id", "kind", "doc", "when", "set", "priority", "option", "value", "order", "message", "name", "type",
        "help", "choices", "allowed", "fixes", "default", "kernel_role", "unset_values"]
rules = st.lists(st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6), max_size=4)
WHENS = st.one_of(st.text(max_size=30), st.sampled_from([
    'kv_cache_dtype == "fp8_e4m3"', "not (a == b)", "page_size > 1e400", "x in []", "((((", "a and or b",
    "__import__('os')", "platform.major >= 9 and not enable_hisparse", 'attention_backend != null']))


@FUZZ
@given(st.one_of(
    st.text(max_size=200),
    st.builds(lambda r: yaml.safe_dump({"schema": "resolver/1", "rules": r}), rules),
    st.builds(lambda w, k: yaml.safe_dump({"schema": "resolver/1", "rules": [
        {"id": "conflict.fuzz", "kind": k, "doc": "d", "when": w, "message": "m {kv_cache_dtype}"}]}),
        WHENS, st.sampled_from(["conflict", "fact", "default", "adjust"])),
))
# the cases found once by chance are drawn on every run (a NUL byte, a lone surrogate, a deep or exploding when:)
@example("\x00")
@example("schema: resolver/1\nrules: []\n\x00")
@example("schema: resolver/1\nrules:\n"
         "  - {id: conflict.x, kind: conflict, doc: d, message: m, when: '" + "not " * 3000 + "x'}\n")
@example("schema: resolver/1\nrules:\n"
         "  - {id: conflict.x, kind: conflict, doc: d, message: '{x!z}', when: page_size == 1}\n")
def test_any_rule_file_loads_or_fails_with_file_and_line(tmp_path_factory, text):
    directory = tmp_path_factory.mktemp("rules")
    shutil.copy(os.path.join(get_engine().pack.directory, "options.yaml"), directory / "options.yaml")
    (directory / "fuzz.yaml").write_text(text)
    try:
        load_rules(str(directory))
    except ResolverError as exc:
        assert str(exc) and ":" in str(exc)


def test_a_rule_pack_cannot_import_or_run_anything(tmp_path):
    (tmp_path / "evil.py").write_text("raise SystemExit('imported!')\n")
    (tmp_path / "a.yaml").write_text("!!python/object/apply:os.system ['echo pwned']\n")
    (tmp_path / "b.yaml").write_text("schema: resolver/1\nrules:\n  - id: conflict.x\n    kind: conflict\n    doc: d\n"
                                     "    when: __import__('evil')\n    message: m\n")
    sys.path.insert(0, str(tmp_path))
    try:
        err = io.StringIO()
        assert main(["--rules", str(tmp_path), "--platform", "h100"], io.StringIO(), err) == 2
    finally:
        sys.path.remove(str(tmp_path))
    assert "evil" not in sys.modules and "a.yaml" in err.getvalue()


lines = st.one_of(
    st.text(max_size=80),
    st.builds(json.dumps, json_values),
    st.builds(lambda p, m, a, i: json.dumps({"id": 1, "platform": p, "model": m, "args": a, "installed": i}),
              st.one_of(st.sampled_from(["h100", "mi300x", "sm121", "auto", "H100"]), scalars),
              st.one_of(st.none(), st.dictionaries(st.sampled_from(["architectures", "index_topk", "kv_lora_rank",
                                                                    "text_config", "num_key_value_heads"]),
                                                   json_values, max_size=4)),
              st.dictionaries(st.sampled_from(["kv_cache_dtype", "page_size", "enable_hisparse", "tp_size", "nope"]),
                              scalars, max_size=3),
              st.one_of(st.none(), st.dictionaries(st.text(max_size=6), scalars, max_size=2))),
)


@FUZZ
@given(lines)
@example("\x00")
@example('{"id": 1, "platform": "h100\\u0000"}')
@example('{"id": 1, "platform": "h100", "model_path": "\\u0000"}')
@example('{"id": 1, "platform": "h100", "args": {"served_model_name": "\\ud800"}}')
# a byte that is not UTF-8, as surrogateescape reads it
@example('{"id": 1, "platform": "h100", "model_arch": "\udcff"}')
def test_any_batch_line_gives_a_result_never_an_internal_error(line):
    result = resolve_line(get_engine(), line)
    assert result["status"] in ("resolved", "conflict", "error") and not result.get("internal"), result
    json.dumps(result)  # always serialisable


flags = st.lists(st.one_of(
    st.sampled_from(["--kv-cache-dtype", "--page-size", "--attention-backend", "--enable-hisparse", "--platform",
                     "--dsa-decode-backend", "--tp-size", "--explain", "--format", "--model-arch", "--model-config",
                     "--installed", "--compute-capability", "--strict", "--rules", "--color"]),
    st.text(max_size=12)), max_size=8)


@FUZZ
@given(flags)
@example(["--rules", "\x00"])
@example(["--model-config", "\x00"])
@example(["--rules", ""])
@example(["--model-arch", "\x00"])
def test_any_command_line_exits_0_1_or_2(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(["--platform", "h100", "--model-arch", "LlamaForCausalLM", *argv], out, err)
    assert code in (0, 1, 2), (argv, err.getvalue())
    if code == 2:
        assert err.getvalue().strip() and "Traceback" not in err.getvalue()
