"""Evidence anyone can follow: every evidence id, P-number and document the repository cites has its
target in the repository (docs/evidence.md, generated from resolver/data/evidence.yaml), and
``resolve kernels --evidence ID`` prints it."""
from __future__ import annotations

import io
import re
import tomllib
from pathlib import Path

import pytest

from resolver.cli import main
from resolver.evidence import ID_RE, catalogue, lookup, render_markdown

from .conftest import ROOT as _ROOT

#: where the project cites evidence (tests and tools may cite outside material they test against)
ROOT = Path(_ROOT)
SCANNED = ("rules", "resolver", "docs", "README.md")
SUFFIXES = {".py", ".yaml", ".md"}

#: an id-shaped name that is not evidence: model names (MiniMax-M2, MiniMax M3, M3.1, Kimi K3, Intern-S2,
#: DeepSeek V3/R1)
NOT_EVIDENCE_BEFORE = re.compile(r"(MiniMax[- ]|Kimi[- ]|Intern-|V3/)$")
NOT_EVIDENCE_AFTER = re.compile(r"^\.\d")
#: a file of another repository, named with it ("sgl-project/sglang docs/platforms/xpu.md") or in a URL
OTHER_REPOSITORY = re.compile(r"([\w.-]+/[\w.-]+ |https?://\S*)$")
#: a document name: docs/x.md, ../a/b.md, x.md
DOC_RE = re.compile(r"(?<![\w/.-])((?:\.\./|[\w-]+/)*[\w.-]+\.md)(#[\w-]+)?\b")
#: a numbered section of a document ("kernels.md 0.4", "sglang-matrix.md section 4.1", "matrix 4.7",
#: "matrix §3"): no document in the repository numbers its sections
SECTION_RE = re.compile(r"(\.md|\bmatrix)(,? (sections?|§) ?| §?)\d")


def _files(root: Path) -> list[Path]:
    out: list[Path] = []
    for name in SCANNED:
        p = root / name
        out += [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.suffix in SUFFIXES and f.is_file())
    return out


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
    return found


def test_every_citation_has_its_target_in_the_repository():
    known = set(catalogue())
    problems = [p for f in _files(ROOT) for p in problems_in(f.read_text(encoding="utf-8"), f, ROOT, known)]
    assert problems == [], "\n".join(problems)


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
])
def test_an_invented_citation_is_reported(text, needle):
    where = ROOT / "docs" / "invented.md"
    found = problems_in(text, where, ROOT, set(catalogue()))
    assert any(needle in p for p in found), found


def test_real_citations_pass():
    text = ("S9, B7; GH1 [adapter]; R1/R2/R3; MiniMax-M2, MiniMax M3, Kimi K3, DeepSeek V3/R1; M3.1; [x](kernels.md); "
            "[MK1](evidence.md#mk1); sgl-project/sglang docs/platforms/xpu.md; https://github.com/a/b/blob/main/docs/c.md")
    assert problems_in(text, ROOT / "docs" / "invented.md", ROOT, set(catalogue())) == []


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


def test_kernels_evidence_unknown_id_is_exit_2_with_the_known_ids():
    code, out, err = _cli(["kernels", "--evidence", "S99"])
    assert code == 2 and out == ""
    assert "no evidence id 'S99'" in err and "did you mean 'S9'" in err and "GH1" in err and "P16" in err


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
        for m in re.finditer(r"\b(srt/[\w/.]*\w)(?:[ ,:]+(?:[\d-]+[, ]*)*([A-Za-z_]\w*+(?![/.]))?)?", f.read_text(encoding="utf-8")):
            cited += 1
            path = site / "sglang" / m.group(1)
            if not path.exists():
                missing.append(f"{f.name}: {m.group(1)}")
            elif (path.is_file() and m.group(2) and not m.group(2)[0].isupper() and m.group(2) not in _WORDS
                  and not _defines(path, m.group(2))):
                missing.append(f"{f.name}: {m.group(2)} in {m.group(1)}")
    assert cited > 400 and missing == [], missing


def _defines(path: Path, name: str) -> bool:
    return re.search(rf"^\s*(def|class) {name}\b|^{name}\s*[:=]", path.read_text(encoding="utf-8"), re.MULTILINE) is not None


#: words that follow a cited file in prose, not function names
_WORDS = {"and", "or", "the", "a", "with", "on", "for", "in", "when", "as", "is", "to", "of", "via", "which", "if", "but"}


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
