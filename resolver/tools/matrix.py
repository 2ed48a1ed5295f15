"""``resolve matrix``: what each backend option resolves to, accepts and refuses, across platforms,
KV-cache dtypes and model kinds.

Every cell is one resolution through the engine, never a hard-coded outcome, so the matrix
follows the rules and the kernel adapters.  ``docs/compatibility.md`` is exactly what
``resolve matrix --format markdown`` prints; a test fails when it is stale.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any, TextIO

from ..errors import InputError
from ..platforms import PLATFORMS

__all__ = ["MODEL_KINDS", "matrix", "survey"]

#: the kernel roles of the backend options the matrix covers (attention_backend and the two DSA options)
BACKEND_ROLES = ("attention", "dsa_prefill", "dsa_decode")
KV_OPTION = "kv_cache_dtype"
GENERATE = "resolve matrix --format markdown > docs/compatibility.md"  # how the shipped page is made


@dataclass(frozen=True)
class ModelKind:
    """A representative config.json for one family of attention layouts."""

    key: str  # its name in the JSON output; upper-cased, in the tables
    title: str
    config: dict[str, Any]
    shown_roles: tuple[str, ...]  # the backend options whose default picks the defaults table shows
    tried_roles: tuple[str, ...]  # the backend options whose choices the explicit-choice tables try on it

    @property
    def label(self) -> str:
        return self.key.upper()


MODEL_KINDS: tuple[ModelKind, ...] = (
    ModelKind("mha", "grouped-query attention (Llama)",
              {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 32, "num_key_value_heads": 8,
               "head_dim": 128}, ("attention",), ("attention",)),
    ModelKind("mla", "multi-head latent attention (DeepSeek V3)",
              {"architectures": ["DeepseekV3ForCausalLM"], "kv_lora_rank": 512, "num_key_value_heads": 128,
               "qk_rope_head_dim": 64}, ("attention",), ("attention",)),
    ModelKind("dsa", "DeepSeek sparse attention (DeepSeek V3.2)",
              {"architectures": ["DeepseekV32ForCausalLM"], "index_topk": 2048, "kv_lora_rank": 512,
               "qk_rope_head_dim": 64}, BACKEND_ROLES, ("dsa_prefill", "dsa_decode")),
    ModelKind("glm-dsa", "DeepSeek sparse attention (GLM MoE DSA)",
              {"architectures": ["GlmMoeDsaForCausalLM"], "index_topk": 2048, "kv_lora_rank": 512,
               "qk_rope_head_dim": 64}, BACKEND_ROLES, ("dsa_prefill", "dsa_decode")),
)


# --- what the engine says ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reason:
    """One conflict of a resolution, as the matrix reports it."""

    rule: str
    message: str
    options: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "options": list(self.options), "message": self.message}


@dataclass(frozen=True)
class DefaultCell:
    """What the resolver picks for a model kind and KV dtype on a platform with nothing else set."""

    model: str
    kv_cache_dtype: str
    platform: str
    values: dict[str, Any]  # the backend options of the model kind, and the KV dtype it ends with
    conflicts: tuple[Reason, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "kv_cache_dtype": self.kv_cache_dtype, "platform": self.platform,
                "status": "conflict" if self.conflicts else "resolved", "values": dict(self.values),
                "conflicts": [r.to_dict() for r in self.conflicts]}


@dataclass(frozen=True)
class ChoiceCell:
    """What becomes of one explicitly typed backend on a platform, for a model kind, KV dtype left to the resolver."""

    option: str
    value: str
    model: str
    platform: str
    status: str  # accepted | rewritten | refused
    resolved: Any  # the value the option ends with
    refused_by: tuple[Reason, ...]  # conflicts the choice brings
    also: tuple[Reason, ...]  # conflicts the launch has without the choice too (see the defaults)

    def to_dict(self) -> dict[str, Any]:
        return {"option": self.option, "value": self.value, "model": self.model, "platform": self.platform,
                "status": self.status, "resolved_value": self.resolved,
                "conflicts": [r.to_dict() for r in self.refused_by],
                "other_conflicts": [r.to_dict() for r in self.also]}


@dataclass
class Survey:
    """The whole matrix as data: every resolution the tables are drawn from."""

    options: list  # the backend options covered (rules Option objects), in BACKEND_ROLES order
    kv_dtypes: list[str]
    unset_kv: str  # the KV dtype spelling that means "let the resolver pick"
    defaults: dict[tuple[str, str, str], DefaultCell] = field(default_factory=dict)  # (model, kv, platform)
    choices: list[ChoiceCell] = field(default_factory=list)

    def shown(self, kind: ModelKind) -> list[str]:
        return [o.name for o in self.options if o.kernel_role in kind.shown_roles]


def _backend_options(pack) -> list:
    options = [o for role in BACKEND_ROLES for o in pack.options.values() if o.kernel_role == role]
    if not options:
        raise InputError(f"the rule pack declares no option with a kernel_role of {', '.join(BACKEND_ROLES)}")
    return options


def _kv_dtypes(pack) -> tuple[list[str], str]:
    option = pack.options.get(KV_OPTION)
    if option is None or not option.choices:
        raise InputError(f"the rule pack declares no choice option '{KV_OPTION}'")
    # "let the resolver pick" first: it is the row every other table compares against
    unset = option.unset_values[0] if option.unset_values else option.default
    ordered = [unset] + [c for c in option.choices if c != unset]
    return ordered, unset


def _reasons(resolution) -> tuple[Reason, ...]:
    return tuple(Reason(c.rule.id, c.message, tuple(c.options)) for c in resolution.conflicts)


def _resolve(engine, kind: ModelKind, platform: str, args: dict[str, Any]):
    from ..api import resolve_request

    # fixes=False: the matrix reports refusals, not remedies, and computing fixes is the slow part
    return resolve_request(engine, platform=platform, args=args, model=kind.config, fixes=False)


#: one cell to resolve: (model kind key, platform, args, the options whose values it reports)
_Cell = tuple[str, str, dict[str, Any], tuple[str, ...]]


def _setup(rules: str) -> Any:
    from ..api import get_engine

    return get_engine(rules)


def _cell(engine, cell: _Cell) -> tuple[dict[str, Any], tuple[Reason, ...]]:
    """What a cell reports of its resolution (small, and picklable: it may come from a worker)."""
    kind, platform, args, names = cell
    res = _resolve(engine, _kind(kind), platform, args)
    return {name: res.values[name] for name in names}, _reasons(res)


def survey(engine, jobs: int = 1) -> Survey:
    """Resolve every cell of the matrix; ``jobs`` > 1 on that many processes (each loading the pack
    from its directory), 0 as many as the work pays for (resolver/jobs.py), with the same result."""
    from ..adapters import registry
    from ..jobs import Progress, plan_jobs, run_ordered

    kv_dtypes, unset = _kv_dtypes(engine.pack)
    result = Survey(_backend_options(engine.pack), kv_dtypes, unset)
    defaults: list[_Cell] = [(kind.key, platform.name, {} if kv == unset else {KV_OPTION: kv},
                              (*result.shown(kind), KV_OPTION))
                             for kind in MODEL_KINDS for kv in kv_dtypes for platform in PLATFORMS]
    served = registry().served()
    tried = [(option.name, value, kind) for option in result.options
             for value in sorted(v for v in option.choices if v in served)
             for kind in MODEL_KINDS if option.kernel_role in kind.tried_roles]
    choices: list[_Cell] = [(kind.key, p.name, {option: value}, (option,)) for option, value, kind in tried
                            for p in PLATFORMS]
    cells = defaults + choices
    jobs = plan_jobs(jobs, len(cells))
    with Progress("matrix", len(cells), unit=" cells") as bar:
        if jobs > 1:
            outcomes = list(run_ordered(_setup, (engine.pack.directory,), _cell, cells, jobs, bar))
        else:  # the engine given, which may not come from a directory
            outcomes = list(run_ordered(lambda: engine, (), _cell, cells, 1, bar))
    # the outcomes are the defaults' then the choices': the defaults take the first part only
    for (kind_key, platform, args, _), (values, reasons) in zip(defaults, outcomes, strict=False):
        kv = args.get(KV_OPTION, unset)
        result.defaults[kind_key, kv, platform] = DefaultCell(kind_key, kv, platform, values, reasons)
    for (kind_key, platform, args, _), (values, reasons) in zip(choices, outcomes[len(defaults):], strict=True):
        [(option, value)] = args.items()
        result.choices.append(_choice_cell(result, option, value, kind_key, platform, values[option], reasons))
    return result


def _choice_cell(result: Survey, option: str, value: str, kind: str, platform: str, resolved: Any,
                 reasons: tuple[Reason, ...]) -> ChoiceCell:
    # a conflict the launch has without the choice (a DSA model whose default decode kernel cannot
    # run, say) is not the choice's fault, unless it names the option itself
    before = {r.rule for r in result.defaults[kind, result.unset_kv, platform].conflicts}
    refused_by = tuple(r for r in reasons if r.rule not in before or option in r.options)
    also = tuple(r for r in reasons if r not in refused_by)
    status = "refused" if refused_by else ("rewritten" if resolved != value else "accepted")
    return ChoiceCell(option, value, kind, platform, status, resolved, refused_by, also)


# --- tables -----------------------------------------------------------------------------------------------


@dataclass
class Table:
    section: str
    title: str
    intro: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # footnote n is notes[n - 1]


class _Footnotes:
    """Numbered reasons under one table, each listed once however many cells cite it."""

    def __init__(self, table: Table):
        self.table = table
        self.numbers: dict[str, int] = {}

    def refs(self, reasons, platform: str) -> str:
        numbers = sorted({self._number(r, platform) for r in reasons})
        return "[" + ", ".join(map(str, numbers)) + "]"

    def _number(self, reason: Reason, platform: str) -> int:
        text = f"`{reason.rule}`: {headline(reason.message, platform)}"
        if text not in self.numbers:
            self.table.notes.append(text)
            self.numbers[text] = len(self.table.notes)
        return self.numbers[text]


_ECHO = re.compile(r"\s*\(got [^)]*\)")  # "(got --x=1, --y=2)": the request echoed back, the same in every cell
# where the first clause of a message ends: ";", ":" or "." after a word or a closing bracket or quote
# (not the dots of an ellipsis)
_CLAUSE_END = re.compile(r"(?<=[\w)\"'])[;:.]\s")
_MIN_HEADLINE = 30  # a shorter first clause ("Error:") says too little to stand alone


def headline(message: str, platform: str) -> str:
    """A conflict message cut to its first clause, the column's platform spelled "this platform": what
    stays the same from cell to cell, so a footnote serves a whole row.  The rest (the evidence, the
    values echoed back) is in the JSON output and in `resolve --explain`."""
    text = " ".join(message.split())
    text = re.sub(rf"\b{re.escape(platform)}\b", "this platform", text)
    text = _ECHO.sub("", text)
    for end in _CLAUSE_END.finditer(text):
        if end.start() >= _MIN_HEADLINE:
            return text[:end.start()] + "."
    return text


def _platform_names() -> list[str]:
    return [p.name for p in PLATFORMS]


def defaults_table(result: Survey, kind: ModelKind) -> Table:
    table = Table("Defaults", f"{kind.label}: {kind.title}",
                  f"`{kind.config['architectures'][0]}` with only the KV cache dtype set (nothing set for `auto`).",
                  ["KV cache", "option", *_platform_names()])
    notes = _Footnotes(table)
    shown = result.shown(kind)
    for kv in result.kv_dtypes:
        cells = [result.defaults[kind.key, kv, p] for p in _platform_names()]
        rows = list(shown)
        # where the request leaves the KV dtype to the resolver, show what it became if it picked one
        if kv == result.unset_kv and any(c.values[KV_OPTION] != kv for c in cells):
            rows.append(KV_OPTION)
        for i, option in enumerate(rows):
            label = f"`{kv}`" if i == 0 else ""
            table.rows.append([label, f"`{option}`", *(_default_mark(c, option, rows, notes) for c in cells)])
    return table


def _default_mark(cell: DefaultCell, option: str, rows: list[str], notes: _Footnotes) -> str:
    # a conflict goes to the rows of the options it names; one naming none of them refuses the
    # whole launch, so every row of the group carries it
    about = [r for r in cell.conflicts if option in r.options or not set(r.options) & set(rows)]
    value = cell.values[option]
    text = "—" if value is None else str(value)
    if not about:
        return text
    return ("" if value is None else text + " ") + "✗ " + notes.refs(about, cell.platform)


def choices_table(result: Survey, option) -> Table:
    table = Table("Explicit choices", f"`{option.flag}`",
                  f"`{option.flag} VALUE` with nothing else set (KV cache dtype `{result.unset_kv}`), for each value "
                  f"a kernel adapter serves.",
                  ["value", "model", *_platform_names()])
    notes = _Footnotes(table)
    cells = [c for c in result.choices if c.option == option.name]
    previous = None
    for (value, model), row in groupby(cells, key=lambda c: (c.value, c.model)):
        label = f"`{value}`" if value != previous else ""  # a value's first row names it, the others leave it blank
        previous = value
        table.rows.append([label, _kind(model).label, *(_choice_mark(c, notes) for c in row)])
    return table


def _choice_mark(cell: ChoiceCell, notes: _Footnotes) -> str:
    if cell.status == "refused":
        return "✗ " + notes.refs(cell.refused_by, cell.platform)
    mark = "ok" if cell.status == "accepted" else f"→ {cell.resolved}"
    return f"{mark} {notes.refs(cell.also, cell.platform)}" if cell.also else mark


def _kind(key: str) -> ModelKind:
    return next(k for k in MODEL_KINDS if k.key == key)


def tables(result: Survey) -> list[Table]:
    return [*(defaults_table(result, kind) for kind in MODEL_KINDS),
            *(choices_table(result, option) for option in result.options)]


# --- output -----------------------------------------------------------------------------------------------


def _md(text: str) -> str:
    # messages quote SGLang and kernel sources: keep them from becoming table columns, HTML or emphasis
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*")


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _preamble(rules: str | None) -> list[str]:
    if rules is None:
        origin = ["Generated from the shipped rules (`rules/`) and the kernel adapters (`resolver/adapters/`) by",
                  f"`{GENERATE}`: do not edit it by hand (a test fails when it is stale)."]
    else:
        origin = [f"Generated from the rule pack `{rules}` and the kernel adapters by `{_command(rules, 'markdown')}`."]
    return [
        "# Compatibility matrix",
        "",
        *origin,
        "Every cell is one resolution, `resolve --platform COLUMN --model-config MODEL` plus the flags its table",
        "names; add `--explain` to the same command to see why. `--format json` has every cell with the full",
        "messages; [kernel-matrix.md](kernel-matrix.md) has the evidence behind each kernel's refusals.",
        "",
        "How to read a cell:",
        "",
        "- a backend name: what the resolver picks (defaults tables); `—`: no value;",
        "- `ok`: the typed value is kept and the launch resolves; `→ X`: the resolver rewrites it to X, with a",
        "  warning (`--strict` refuses instead);",
        "- `✗ [n]`: refused for reason n, listed under the table as the conflict's rule id and the first clause",
        "  of its message (\"this platform\" is the column). After a backend name: the launch with that pick is",
        "  refused;",
        "- `ok [n]`, `→ X [n]`: the typed value is accepted, but the launch still conflicts for reason n, as it",
        "  does without that value (see the defaults tables).",
        "",
        "## Platforms (columns)",
        "",
        "| platform | GPU | aliases |",
        "|---|---|---|",
        *(f"| `{p.name}` | {p.description} | {', '.join(p.aliases)} |" for p in PLATFORMS),
        "",
        "## Model kinds",
        "",
        "| model | kind | config.json |",
        "|---|---|---|",
        *(f"| {k.label} | {k.title} | `{json.dumps(k.config)}` |" for k in MODEL_KINDS),
    ]


def _command(rules: str | None, form: str) -> str:
    return "resolve matrix" + (f" --rules {rules}" if rules is not None else "") + f" --format {form}"


def render_markdown(result: Survey, rules: str | None) -> str:
    lines = _preamble(rules)
    section = None
    for table in tables(result):
        if table.section != section:
            section = table.section
            lines += ["", f"## {section}"]
        lines += ["", f"### {table.title}", "", table.intro, "",
                  _md_row(table.header), _md_row(["---"] * len(table.header)),
                  *(_md_row(row) for row in table.rows)]
        if table.notes:
            lines += [""] + [f"{n}. {_md(note)}" for n, note in enumerate(table.notes, 1)]
    return "\n".join(lines) + "\n"


def render_text(result: Survey) -> str:
    out: list[str] = []
    for table in tables(result):
        grid = [table.header] + [[cell.replace("`", "") for cell in row] for row in table.rows]
        widths = [max(len(r[i]) for r in grid) for i in range(len(table.header))]
        out += [f"{table.section}: {table.title}".replace("`", ""), table.intro.replace("`", "")]
        out += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in grid]
        out += [f"  [{n}] {note.replace('`', '')}" for n, note in enumerate(table.notes, 1)] + [""]
    return "\n".join(out)


def render_json(result: Survey, rules: str | None) -> str:
    data = {
        "generated_by": _command(rules, "json"),
        "platforms": _platform_names(),
        "kv_cache_dtypes": list(result.kv_dtypes),
        "models": {k.key: {"title": k.title, "config": k.config} for k in MODEL_KINDS},
        "options": [o.name for o in result.options],
        "defaults": [cell.to_dict() for cell in result.defaults.values()],
        "choices": [cell.to_dict() for cell in result.choices],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def matrix(argv: list[str], out: TextIO) -> int:
    from ..api import get_engine
    from ..argv import subcommand_parser
    from ..jobs import add_jobs_argument

    p = subcommand_parser("matrix", "Tables of what each backend option resolves to, accepts and refuses (with the "
                                    "reason) across platforms, KV-cache dtypes and model kinds, from the rules and "
                                    "kernel adapters.", formats=("markdown", "json", "text"))
    p.add_argument("--rules", metavar="DIR", help="use the rule files of DIR instead of the shipped ones")
    add_jobs_argument(p, 0, "the cells")
    ns = p.parse_args(argv)
    result = survey(get_engine(ns.rules), ns.jobs)
    if ns.format == "json":
        out.write(render_json(result, ns.rules))
    elif ns.format == "text":
        out.write(render_text(result))
    else:
        out.write(render_markdown(result, ns.rules))
    return 0

