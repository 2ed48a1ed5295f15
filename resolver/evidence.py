"""The evidence catalogue: what each evidence id (S9, B7, GH1, R1, MK3, P5, ...) stands for.

The rules' ``evidence:`` fields, the kernel adapters' claims, the docs and the code comments cite
these ids.  The catalogue ships with the package (``resolver/data/evidence.yaml``); docs/evidence.md
is generated from it (``python -m resolver.evidence > docs/evidence.md``), and ``resolve kernels
--evidence ID`` prints one entry.
"""
from __future__ import annotations

import re
import sys
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

__all__ = ["ID_RE", "Entry", "catalogue", "cited_ids", "kinds", "lookup", "render_entry", "render_markdown"]

#: an evidence id: a known prefix and a number (S9, GH1, MK12, P16)
ID_RE = re.compile(r"\b(MK|GH|S|B|U|M|R|D|P)(\d{1,2})\b")


@dataclass(frozen=True)
class Entry:
    id: str
    kind: str
    observed: str
    where: str
    links: tuple[str, ...]
    strength: str | None = None


def _kind(entry_id: str) -> str:
    m = ID_RE.fullmatch(entry_id)
    if m is None:
        raise ValueError(f"evidence id {entry_id!r} is not a prefix and a number")
    return m.group(1)


@lru_cache(maxsize=1)
def _load() -> tuple[dict[str, str], dict[str, Entry]]:
    text = resources.files("resolver").joinpath("data/evidence.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    kinds_ = {str(k): str(v) for k, v in data["kinds"].items()}
    entries: dict[str, Entry] = {}
    for raw in data["entries"]:
        entry_id = str(raw["id"])
        kind = _kind(entry_id)
        if kind not in kinds_ or entry_id in entries:
            raise ValueError(f"evidence.yaml: {entry_id} has an unknown kind or is listed twice")
        links = raw["links"]
        entries[entry_id] = Entry(entry_id, kind, " ".join(str(raw["observed"]).split()),
                                  " ".join(str(raw["where"]).split()),
                                  tuple(str(u) for u in (links if isinstance(links, list) else [links])),
                                  raw.get("strength"))
    return kinds_, entries


def kinds() -> dict[str, str]:
    """Prefix -> what the ids of that prefix are, in catalogue order."""
    return dict(_load()[0])


def catalogue() -> dict[str, Entry]:
    """Every entry, by id, in catalogue order."""
    return dict(_load()[1])


def lookup(entry_id: str) -> Entry | None:
    """The entry of one id (case-insensitive), or None."""
    return _load()[1].get(entry_id.strip().upper())


def cited_ids(text: str) -> list[str]:
    """The catalogue ids a text cites, in order, each once (an adapter's claim: "R1/R2/R3: S9: ...; B7")."""
    entries = _load()[1]
    return list(dict.fromkeys(m.group(0) for m in ID_RE.finditer(text) if m.group(0) in entries))


def render_entry(e: Entry) -> str:
    """One entry as plain text (what ``resolve kernels --evidence ID`` prints)."""
    strength = f" ({e.strength})" if e.strength else ""
    lines = [f"{e.id}{strength}: {kinds()[e.kind]}", f"  observed: {e.observed}", f"  where: {e.where}"]
    lines += [f"  link: {u}" for u in e.links]
    return "\n".join(lines) + "\n"


_HEADER = """\
# Evidence catalogue

Every evidence id the project cites (in the rules' `evidence:` fields, the kernel adapters' claims
as `resolve kernels` prints them, conflict messages, these docs and the code comments) is listed
here: what was observed, where, and a public link. `resolve kernels --evidence ID` prints one
entry. This page is generated from `resolver/data/evidence.yaml` (`python -m resolver.evidence >
docs/evidence.md`); `tests/test_evidence.py` fails when an id, a P-number or a document named in
the rules, the code, the docs or the README has no target here.

SGLang's paths are those of the installed `sglang/` package of the 0.5.23 wheel (line numbers as
there), which is `python/sglang/` in [sgl-project/sglang](https://github.com/sgl-project/sglang) at
tag `v0.5.23`. Kernel wheels are the versions SGLang 0.5.23 pins (sglang-kernel 0.4.10,
sgl-flash-mla 1.0.0, flashinfer-python 0.7.2). No entry rests on running a kernel on a GPU: a "no"
rests on compiled code without the target, a host-side check or a reported failure; a "yes" on
compiled code plus an upstream statement, or on SGLang picking it itself.

Strength (R and MK entries): **strong** is direct kernel evidence (no compiled code for the arch, a
host-side check, an assertion) or a runtime report; **medium** is code reading of a path whose
runtime route is not fully established; **weak** is a risk whose runtime behaviour is unknown, which
is neither refused nor preferred.
"""


def render_markdown() -> str:
    """docs/evidence.md."""
    parts = [_HEADER]
    entries = catalogue()
    for prefix, title in kinds().items():
        ids = [e for e in entries.values() if e.kind == prefix]
        if not ids:
            continue
        parts.append(f"\n## {prefix}: {title}\n")
        for e in ids:
            strength = f" ({e.strength})" if e.strength else ""
            links = ", ".join(f"<{u}>" for u in e.links)
            text = textwrap.fill(e.observed + strength, 100, break_long_words=False, break_on_hyphens=False)
            parts.append(f"\n### {e.id}\n\n{text}\n\n- where: {e.where}\n- link: {links}\n")
    return "".join(parts)


if __name__ == "__main__":  # pragma: no cover - the generator of docs/evidence.md
    sys.stdout.write(render_markdown())
