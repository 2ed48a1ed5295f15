"""The docs stay true: generated pages are fresh, YAML examples load and resolve."""
import os
import re

from resolver.adapters.registry import _builtin_adapters
from resolver.api import get_engine, resolve_request
from resolver.loader import load_rules
from resolver.tools.docgen import kernels_markdown, options_markdown

from .conftest import ROOT


def _read(name):
    with open(os.path.join(ROOT, "docs", name), encoding="utf-8") as fh:
        return fh.read()


def test_options_page_is_generated_from_the_declarations():
    assert _read("options.md") == options_markdown(load_rules()), \
        "run: python -m resolver.tools.docgen > docs/options.md"


def test_kernel_matrix_page_is_generated_from_the_adapters():
    assert _read("kernel-matrix.md") == kernels_markdown(_builtin_adapters()), \
        "run: python -m resolver.tools.docgen kernels > docs/kernel-matrix.md"


def test_rule_format_example_loads_and_behaves_as_documented(rules_dir):
    block = re.search(r"```yaml\n(.*?)```", _read("rule-format.md"), re.S).group(1)
    directory = rules_dir({"example.yaml": block}, with_shipped_options=True)
    engine = get_engine(directory)
    big = resolve_request(engine, platform="b200", args={"page_size": 16})
    assert big.values["example_backend"] == "fast" and big.values["page_size"] == 64 and big.warnings
    small = resolve_request(engine, platform="h100")
    assert small.values["example_backend"] == "safe"
    rocm = resolve_request(engine, platform="mi300x", args={"example_backend": "safe"})
    assert [c.rule.id for c in rocm.conflicts] == ["conflict.example.safe-not-on-rocm"]
    assert rocm.conflicts[0].allowed == ("fast",)
    assert {"example_backend": "fast"} in [f.set for f in rocm.conflicts[0].fixes]


def test_readme_quick_start_runs_the_seed_case():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    assert "--dsa-decode-backend tilelang" in readme and "pytest" in readme
