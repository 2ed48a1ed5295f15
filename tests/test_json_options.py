"""Fields SGLang declares that the engine never sees (issue 24): ``json`` options, whose values are JSON
objects and lists (SGLang's value is the typed one or its declared default), and ``not_decided``
options, whose value SGLang draws at start-up and which results name instead of leaving silently absent."""
from __future__ import annotations

import io
import json

import pytest

from resolver import resolve
from resolver.cli import main
from resolver.errors import InputError, RuleFileErrors

OPTIONS = """\
schema: resolver/1
rules:
  - id: option.page_size
    kind: option
    doc: Tokens per KV page.
    name: page_size
    type: int
    help: Page size.
  - id: option.mm_process_config
    kind: option
    doc: Multimodal processor settings.
    name: mm_process_config
    type: json
    default: {}
    help: Multimodal processor config (JSON).
  - id: option.allowed_media_domains
    kind: option
    doc: Domains media URLs may come from.
    name: allowed_media_domains
    type: json
    default: []
    help: Allowed media domains.
  - id: option.random_seed
    kind: option
    doc: The random seed.
    name: random_seed
    type: int
    not_decided: SGLang draws one at start-up when none is typed
    help: Random seed.
"""


@pytest.fixture
def pack(rules_dir):
    return rules_dir({"options.yaml": OPTIONS})


def test_a_json_option_reports_its_declared_default_or_the_typed_value(pack):
    res = resolve({}, platform="h100", model_arch="LlamaForCausalLM", rules=pack)
    assert res.values["mm_process_config"] == {} and res.values["allowed_media_domains"] == []
    res.values["mm_process_config"]["x"] = 1  # a caller's copy: the next resolution is not changed
    again = resolve({"mm_process_config": {"a": [1, 2]}, "allowed_media_domains": ["a.com"]}, platform="h100",
                    model_arch="LlamaForCausalLM", rules=pack)
    assert again.values["mm_process_config"] == {"a": [1, 2]} and again.values["allowed_media_domains"] == ["a.com"]
    assert resolve({}, platform="h100", model_arch="LlamaForCausalLM", rules=pack).values["mm_process_config"] == {}


def test_the_command_line_parses_json_and_list_flags_as_sglang_does(pack):
    out, err = io.StringIO(), io.StringIO()
    code = main(["--rules", pack, "--platform", "h100", "--model-arch", "LlamaForCausalLM",
                 "--mm-process-config", '{"image": {"max_pixels": 1024}}', "--allowed-media-domains", "a.com", "b.com",
                 "--format", "json"], out, err)
    values = json.loads(out.getvalue())["values"]
    assert code == 0 and values["mm_process_config"] == {"image": {"max_pixels": 1024}}
    assert values["allowed_media_domains"] == ["a.com", "b.com"]
    code = main(["--rules", pack, "--platform", "h100", "--mm-process-config", "{not json"], out, err)
    assert code == 2 and "--mm-process-config: expected JSON" in err.getvalue()


def test_a_field_sglang_decides_at_start_up_is_named_not_silently_absent(pack):
    res = resolve({}, platform="h100", model_arch="LlamaForCausalLM", rules=pack)
    assert res.values["random_seed"] is None
    assert res.not_decided == {"random_seed": "SGLang draws one at start-up when none is typed"}
    assert res.to_dict()["not_decided"] == [{"field": "random_seed",
                                             "why": "SGLang draws one at start-up when none is typed"}]
    assert "not decided here (SGLang decides them when it starts): random_seed" in res.explain()
    typed = resolve({"random_seed": 7}, platform="h100", model_arch="LlamaForCausalLM", rules=pack)
    assert typed.values["random_seed"] == 7 and typed.not_decided == {}


@pytest.mark.parametrize("rule, needle", [
    ("  - {id: conflict.x, kind: conflict, doc: d, when: 'mm_process_config == 1', message: m}",
     "unknown fact or option 'mm_process_config'"),
    ("  - {id: conflict.x, kind: conflict, doc: d, when: 'user.allowed_media_domains != null', message: m}",
     "unknown fact or option 'user.allowed_media_domains'"),
    ("  - {id: default.x, kind: default, doc: d, set: {mm_process_config: 1}, priority: 10}",
     "names the json option 'mm_process_config'"),
    ("  - {id: option.y, kind: option, doc: d, name: y, type: int, default: {a: 1}, help: h}",
     "only a json option has an object or list default"),
    ("  - {id: option.y, kind: option, doc: d, name: y, type: json, choices: [a], help: h}",
     "option 'y' of type json takes no 'choices'"),
])
def test_no_rule_reads_or_decides_a_json_option(rules_dir, rule, needle):
    directory = rules_dir({"options.yaml": OPTIONS, "more.yaml": "schema: resolver/1\nrules:\n" + rule + "\n"})
    with pytest.raises(RuleFileErrors, match=needle):
        resolve({}, platform="h100", rules=directory)


def test_a_request_value_that_is_no_json_is_refused(pack):
    with pytest.raises(InputError, match="--mm-process-config: expected a JSON value"):
        resolve({"mm_process_config": {1, 2}}, platform="h100", rules=pack)
