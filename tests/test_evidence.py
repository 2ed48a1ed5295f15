"""Evidence anyone can follow: every evidence id, P-number and document the repository cites has its
target in the repository (docs/evidence.md, generated from resolver/data/evidence.yaml), and
``resolve kernels --evidence ID`` prints it."""
from __future__ import annotations

import io
import re
import tokenize
import tomllib
from pathlib import Path

import pytest

from resolver.cli import main
from resolver.evidence import ID_RE, catalogue, lookup, render_markdown

from .conftest import ROOT as _ROOT

#: where the project cites evidence: the package, its rules and docs, and the tests, tools, benchmarks,
#: examples and CI script built on them
ROOT = Path(_ROOT)
SCANNED = ("rules", "resolver", "docs", "README.md", "tests", "tools", "benchmarks", "examples", ".ci")
SUFFIXES = {".py", ".yaml", ".md", ".txt"}
#: files without a suffix that are read too (shell scripts)
SCRIPTS = {".ci/run"}

#: the markers around text that names invented citations on purpose (this file's examples only)
OFF, ON = "# citation-check: off", "# citation-check: on"

# citation-check: off (the comments below name invented citations: examples of what the check reports)
#: an id-shaped name that is not evidence: model names (MiniMax-M2, MiniMax M3, M3.1, Kimi K3, Intern-S2,
#: DeepSeek V3/R1)
NOT_EVIDENCE_BEFORE = re.compile(r"(MiniMax[- ]|Kimi[- ]|Intern-|V3/)$")
NOT_EVIDENCE_AFTER = re.compile(r"^\.\d")
#: a file of another repository, named with it ("sgl-project/sglang docs/platforms/xpu.md") or in a URL
OTHER_REPOSITORY = re.compile(r"([\w.-]+/[\w.-]+ |https?://\S*)$")
#: a document name: docs/x.md, ../a/b.md, x.md
DOC_RE = re.compile(r"(?<![\w/.-])((?:\.\./|[\w-]+/)*[\w.-]+\.md)(#[\w-]+)?\b")
#: a numbered section of a document ("kernels.md 0.4", "sglang-matrix.md section 4.1", "matrix 4.7",
#: "matrix §3", "sections 10.3 and 10.4"): no document in the repository numbers its sections
SECTION_RE = re.compile(r"(\.md|\bmatrix)(,? (sections?|§) ?| §?)\d|\b(sections?|§) ?\d")
#: a lettered section of a document ("docs/divergences.md, K", 'divergences.md "D2"', "evidence.md, P5",
#: "kernels.md R1-R17"): the document must have a heading that starts with it
LABEL_RE = re.compile(r"(?<![\w/.-])((?:\.\./|[\w-]+/)*[\w.-]+\.md),? (?:section )?\"?([A-Z]\d*|[A-Z]{2}\d+)\b")
#: a named section of a document ('docs/kernels.md, "What an adapter declares"'): a heading starts with it
NAMED_SECTION_RE = re.compile(r"(?<![\w/.-])((?:\.\./|[\w-]+/)*[\w.-]+\.md),? (?:section )?\"([^\"\n]+)\"")
#: a path into the folder beside the repository (../shared): only the oracle, a test tool the tests and
#: tools run (``../shared/oracle``, ``shared/oracle/ask.py``), may be named; any other file there
#: ("shared/reference/durable-rules.md", "shared/oracle/SLICE.md") is a citation outside the repository
OUTSIDE_RE = re.compile(r"(?<![\w-])shared/(?!oracle(?:/(?:ask|full_pipeline)\.py)?(?![\w/-]|\.\w))[\w./-]+")
# citation-check: on


def _files(root: Path) -> list[Path]:
    out: list[Path] = []
    for name in SCANNED:
        p = root / name
        out += [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file() and (
            f.suffix in SUFFIXES or f.relative_to(root).as_posix() in SCRIPTS))
    return out


def _prose(text: str, suffix: str) -> str:
    """The text a citation can be in, at its place (everything else blanked, line breaks kept): of Python
    source its comments and strings (an identifier, a variable named like an evidence id, cites nothing); of other
    files all of it.  Text between the markers OFF and ON is blanked too."""
    if suffix == ".py":
        lines = text.splitlines(keepends=True)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        keep = [False] * len(text)
        prose = {tokenize.COMMENT, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in prose:
                a, b = starts[tok.start[0] - 1] + tok.start[1], starts[tok.end[0] - 1] + tok.end[1]
                keep[a:b] = [True] * (b - a)
        text = "".join(c if k or c == "\n" else " " for c, k in zip(text, keep, strict=True))
    fenced = rf"{re.escape(OFF)}.*?{re.escape(ON)}"
    return re.sub(fenced, lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.DOTALL)


def _slug(heading: str) -> str:
    """GitHub's anchor for a markdown heading."""
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower()))


def _anchors(doc: Path) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", doc.read_text(encoding="utf-8"), re.MULTILINE)}


def _doc_target(name: str, where: Path, root: Path) -> Path | None:
    for base in (where.parent, root, root / "docs"):
        target = (base / name).resolve()
        if target.is_file() and target.is_relative_to(root.resolve()):
            return target
    return None


def problems_in(text: str, where: Path, root: Path, known: set[str]) -> list[str]:
    """Each citation in ``text`` (the file ``where`` under ``root``) whose target is not in the repository."""
    found: list[str] = []

    def report(pos: int, what: str) -> None:
        line = text.count("\n", 0, pos) + 1
        found.append(f"{where.relative_to(root)}:{line}: {what}")

    for m in ID_RE.finditer(text):
        if (m.group(0) not in known and not NOT_EVIDENCE_BEFORE.search(text[max(0, m.start() - 8):m.start()])
                and not NOT_EVIDENCE_AFTER.match(text[m.end():m.end() + 2])):
            report(m.start(), f"evidence id {m.group(0)} is not in docs/evidence.md")
    for m in DOC_RE.finditer(text):
        if OTHER_REPOSITORY.search(text[text.rfind("\n", 0, m.start()) + 1:m.start()]):
            continue
        target = _doc_target(m.group(1), where, root)
        if target is None:
            report(m.start(), f"document {m.group(1)} is not in the repository")
        elif m.group(2) and m.group(2)[1:] not in _anchors(target):
            report(m.start(), f"{m.group(1)} has no section {m.group(2)}")
    for m in SECTION_RE.finditer(text):
        report(m.start(), f"'{text[m.start():m.end() + 4].strip()}...' cites a numbered section no document here has")
    for m in list(LABEL_RE.finditer(text)) + list(NAMED_SECTION_RE.finditer(text)):
        target = _doc_target(m.group(1), where, root)
        if target is not None and not _has_heading(target, m.group(2)):
            report(m.start(), f"{m.group(1)} has no section {m.group(2)!r}")
    for m in OUTSIDE_RE.finditer(text):
        report(m.start(), f"{m.group(0)} is outside the repository (only the oracle, ../shared/oracle, is run)")
    return found


def _has_heading(doc: Path, label: str) -> bool:
    """Whether a heading of ``doc``, or the bold words that open one of its list items, start with ``label``
    ("K" for "## K: kernels that ...", "Installed packages" for "- **Installed packages.** ...")."""
    text = doc.read_text(encoding="utf-8")
    headings = re.findall(r"^#+ (.*)$", text, re.MULTILINE) + re.findall(r"^\s*[-*] \*\*(.+?)\*\*", text, re.MULTILINE)
    return any(re.match(rf"`?{re.escape(label.lower())}\b", h.lower()) for h in headings)


def test_every_citation_has_its_target_in_the_repository():
    known = set(catalogue())
    files = _files(ROOT)
    assert {"tests/oracle.py", "tools/sglang_diff.py", "benchmarks/bench.py", "examples/launch_server.py",
            ".ci/run", "tests/unit/test_adapters.py", "tests/data/README.md"} <= {
        f.relative_to(ROOT).as_posix() for f in files}
    problems = [p for f in files for p in problems_in(_prose(f.read_text(encoding="utf-8"), f.suffix), f, ROOT, known)]
    assert problems == [], "\n".join(problems)


# citation-check: off (invented citations: what the check must report, and real ones it must pass)
@pytest.mark.parametrize("text, needle", [
    ("Claim(..., 'S77: an invented id')", "evidence id S77"),
    ("a pitfall of the engine (P42)", "evidence id P42"),
    ("see GH99 and MK31", "evidence id GH99"),
    ("details in docs/nowhere.md", "document docs/nowhere.md"),
    ("reference durable-rules.md", "document durable-rules.md"),
    ("as in kernels.md 0.4", "numbered section"),
    ("sglang-matrix.md section 4.1", "document sglang-matrix.md"),
    ("(matrix 4.7)", "numbered section"),
    ("[MK1](evidence.md#mk99)", "evidence.md has no section #mk99"),
    ("docs/x.md (see sgl-project/sglang docs/a.md)", "document docs/x.md"),
    ("one test per error template (sections 10.3 and 10.4)", "numbered section"),
    ("(shared/reference/durable-rules.md)", "shared/reference/durable-rules.md is outside the repository"),
    ("a copy of (`../shared/reference/data.jsonl`)", "shared/reference/data.jsonl is outside the repository"),
    ("(shared/oracle/SLICE.md, Limits 1)", "shared/oracle/SLICE.md is outside the repository"),
    ("(docs/divergences.md, section Z)", "docs/divergences.md has no section 'Z'"),
    ("as the rules use (kernels.md R1-R17)", "kernels.md has no section 'R1'"),
    ('docs/kernels.md, "Which kernel wins"', "docs/kernels.md has no section 'Which kernel wins'"),
])
def test_an_invented_citation_is_reported(text, needle):
    where = ROOT / "docs" / "invented.md"
    found = problems_in(text, where, ROOT, set(catalogue()))
    assert any(needle in p for p in found), found


def test_real_citations_pass():
    text = ("S9, B7; GH1 [adapter]; R1/R2/R3; MiniMax-M2, MiniMax M3, Kimi K3, DeepSeek V3/R1; M3.1; [x](kernels.md); "
            "[MK1](evidence.md#mk1); sgl-project/sglang docs/platforms/xpu.md; "
            "https://github.com/a/b/blob/main/docs/c.md; docs/divergences.md, K; (docs/divergences.md, section K); "
            "docs/divergences.md \"D2\"; docs/evidence.md, P5; "
            "docs/evidence.md, R entries; docs/divergences.md, \"Checkpoint files other than config.json\"; "
            'docs/kernels.md, "What an adapter declares"; the oracle (``../shared/oracle``, shared/oracle/ask.py); '
            "through ../shared/oracle. Usage (from /work/shared): an ELF section .nv_fatbin")
    assert problems_in(text, ROOT / "docs" / "invented.md", ROOT, set(catalogue())) == []


def test_python_identifiers_cite_nothing_but_comments_and_strings_do():
    source = 'S3 = {"speculative_num_steps": 3}  # steps as in S77\nx = S3\n"""see P42"""\nf"{x} GH99 {x}"\n'
    found = problems_in(_prose(source, ".py"), ROOT / "tools" / "invented.py", ROOT, set(catalogue()))
    assert [p.split(": ", 1)[1] for p in found] == [f"evidence id {i} is not in docs/evidence.md"
                                                    for i in ("S77", "P42", "GH99")], found
    assert [p.split(":")[1] for p in found] == ["1", "3", "4"]  # at their own lines
    assert problems_in(_prose(source, ".yaml"), ROOT / "rules" / "invented.yaml", ROOT, set(catalogue()))[0].startswith(
        "rules/invented.yaml:1: evidence id S3")


# citation-check: on


def test_only_this_file_turns_the_check_off_and_each_off_is_turned_on():
    for f in _files(ROOT):
        marks = re.findall(f"{re.escape(OFF)}|{re.escape(ON)}", f.read_text(encoding="utf-8"))
        if f.relative_to(ROOT).as_posix() == "tests/test_evidence.py":
            assert len(marks) >= 4 and marks == [OFF, ON] * (len(marks) // 2), marks
        else:
            assert marks == [], f


def test_docs_evidence_md_is_generated_from_the_catalogue():
    assert (ROOT / "docs" / "evidence.md").read_text(encoding="utf-8") == render_markdown(), \
        "regenerate: python -m resolver.evidence > docs/evidence.md"


def test_every_entry_has_a_source_and_a_public_link():
    for e in catalogue().values():
        assert e.observed and e.where, e.id
        assert e.links and all(u.startswith("https://") for u in e.links), e.id
        assert e.strength in (None, "strong", "medium", "weak"), e.id
    # an unquoted ' #' in evidence.yaml starts a YAML comment: an issue number would be cut off
    for e in catalogue().values():
        if e.kind == "GH":
            assert re.search(r"#\d", e.where), e.id


def test_the_catalogue_ships_with_the_package():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = data["tool"]["setuptools"]["package-data"]["resolver"]
    assert any(Path("data/evidence.yaml").match(p) for p in patterns), patterns


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    return main(argv, out, err), out.getvalue(), err.getvalue()


def test_kernels_evidence_prints_the_entry():
    code, out, err = _cli(["kernels", "--evidence", "s9"])
    assert code == 0 and err == ""
    assert out.startswith("S9: SGLang 0.5.23 source") and "dsa_backend.py" in out and "https://github.com/" in out
    code, out, _ = _cli(["kernels", "--evidence", "MK3", "--format", "json"])
    assert code == 0 and '"id": "MK3"' in out and '"strength": "strong"' in out


# citation-check: off (an id that is not in the catalogue, on purpose)
def test_kernels_evidence_unknown_id_is_exit_2_with_the_known_ids():
    code, out, err = _cli(["kernels", "--evidence", "S99"])
    assert code == 2 and out == ""
    assert "no evidence id 'S99'" in err and "did you mean 'S9'" in err and "GH1" in err and "P16" in err
# citation-check: on


def test_every_adapter_claim_cites_known_evidence():
    """The claims as `resolve kernels` prints them: every id in them is in the catalogue."""
    from resolver.adapters import registry

    for a in registry().adapters:
        for text in [c.evidence for c in a.claims] + [lim.evidence for lim in a.limits]:
            for m in ID_RE.finditer(text):
                assert lookup(m.group(0)) is not None, f"{a.name}: {m.group(0)} in {text!r}"


def test_sglang_sources_cited_exist_in_sglang_0_5_23():
    """Every SGLang file the catalogue cites is in the installed SGLang 0.5.23, and every function named
    after it is defined there (when the oracle's venv is available)."""
    import subprocess

    from .oracle import oracle_python

    find = "import importlib.util as u, os; print(os.path.dirname(os.path.dirname(u.find_spec('sglang').origin)))"
    site = Path(subprocess.run([oracle_python(), "-c", find], capture_output=True, text=True, check=True,
                               timeout=60).stdout.strip())
    missing = []
    cited = 0
    for e in catalogue().values():
        if e.id == "U13":  # upstream, after 0.5.23
            continue
        for m in re.finditer(r"(sglang/[\w/.]+\.py)(?:[:\d, -]*?,? ([A-Za-z_]\w*(?:\.\w+)?)\b)?", e.where):
            cited += 1
            path = site / m.group(1)
            if not path.is_file():
                missing.append(f"{e.id}: {m.group(1)}")
            elif m.group(2) and m.group(2) not in ("and", "the", "a") and not m.group(2).endswith(".py"):
                name = m.group(2).split(".")[-1]
                if not re.search(rf"^\s*(def|class) {name}\b", path.read_text(encoding="utf-8"), re.MULTILINE):
                    missing.append(f"{e.id}: {name} in {m.group(1)}")
    # the rules cite SGLang as "sglang 0.5.23 srt/arg_groups/memory_hook.py handle_gpu_memory_settings"
    for f in sorted((ROOT / "rules").glob("*.yaml")):
        cites = r"\b(srt/[\w/.]*\w)(?:[ ,:]+(?:[\d-]+[, ]*)*([A-Za-z_]\w*+(?![/.]))?)?"
        for m in re.finditer(cites, f.read_text(encoding="utf-8")):
            cited += 1
            path = site / "sglang" / m.group(1)
            if not path.exists():
                missing.append(f"{f.name}: {m.group(1)}")
            elif (path.is_file() and m.group(2) and not m.group(2)[0].isupper() and m.group(2) not in _WORDS
                  and not _defines(path, m.group(2))):
                missing.append(f"{f.name}: {m.group(2)} in {m.group(1)}")
    assert cited > 400 and missing == [], missing


def _defines(path: Path, name: str) -> bool:
    defined = rf"^\s*(def|class) {name}\b|^{name}\s*[:=]"
    return re.search(defined, path.read_text(encoding="utf-8"), re.MULTILINE) is not None


#: words that follow a cited file in prose, not function names
_WORDS = {"and", "or", "the", "a", "with", "on", "for", "in", "when", "as", "is", "to", "of", "via", "which", "if",
          "but"}


def test_kernels_listing_points_to_the_evidence():
    code, out, _ = _cli(["kernels", "fa3"])
    assert code == 0 and "'resolve kernels --evidence ID'" in out


def test_kernels_json_lists_the_evidence_ids_of_each_claim():
    import json

    code, out, _ = _cli(["kernels", "trtllm", "--format", "json"])
    (adapter,) = [a for a in json.loads(out)["adapters"] if a["name"] == "flashinfer-trtllm"]
    claim = next(c for c in adapter["claims"] if c["evidence"].startswith("R1/R2/R3"))
    assert code == 0 and claim["evidence_ids"] == ["R1", "R2", "R3", "S9", "B7", "GH1", "GH2"]
    assert all(lookup(i) for c in adapter["claims"] + adapter["limits"] for i in c["evidence_ids"])


def _output_problems(argv: list[str]) -> tuple[int, list[str], int]:
    """What a command prints: its exit code, each citation in it without a target, and how many evidence ids
    it cites (read as text at the top of the repository, where the paths it prints start)."""
    code, out, err = _cli(argv)
    text = out + err
    cited = sum(m.group(0) in catalogue() for m in ID_RE.finditer(text))
    return code, problems_in(text, ROOT / "(output)", ROOT, set(catalogue())), cited


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_every_evidence_id_resolve_kernels_prints_resolves(fmt):
    code, problems, cited = _output_problems(["kernels", "--format", fmt])
    assert code == 0 and problems == [] and cited > 300, (problems, cited)


@pytest.mark.parametrize("argv, least", [
    # a DSA model on SM120: the R1/R2 conflicts, with the kernels' evidence under --explain
    (["--platform", "rtx5090", "--model-arch", "DeepseekV32ForCausalLM"], 20),
    # resolved, with skipped candidates and the kernel verdicts' evidence in the derivations
    (["--platform", "rtx5090", "--model-arch", "GlmMoeDsaForCausalLM"], 20),
    (["--compute-capability", "11.0", "--model-arch", "DeepseekV3ForCausalLM", "--attention-backend", "trtllm_mla"], 5),
    (["--platform", "a100", "--model-arch", "Qwen3MoeForCausalLM", "--moe-runner-backend", "deep_gemm"], 2),
])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_every_evidence_id_an_explanation_prints_resolves(argv, least, fmt):
    # --verbose: the fullest text (every fact tree and kernel verdict); JSON with --explain is the full form
    code, problems, cited = _output_problems(["--explain", "--verbose", *argv, "--format", fmt])
    assert code in (0, 1) and problems == [] and cited >= least, (problems, cited)
    # the short forms quote fewer ids, and every one of them resolves too
    for short in (["--explain", *argv], list(argv)):
        code, problems, _ = _output_problems([*short, "--format", fmt])
        assert code in (0, 1) and problems == [], problems
