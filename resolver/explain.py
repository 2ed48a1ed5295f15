"""Render a :class:`~resolver.api.Resolution` as text (people) or as a JSON-ready dict.

Both come from the same derivation data; the JSON keeps everything the text shows.  The text
quotes the request and the rule files, which may hold control characters: every quoted piece is
escaped (:func:`~resolver.terminal.escape`) before it meets the renderer's own colour codes.
"""
from __future__ import annotations

import os
import shutil
import textwrap
from typing import Any, ClassVar

from .launch_line import typed_after_fix
from .outcome import FactUse, Loser, show_value
from .provenance import fact_name, kernel_fact, kernel_why_fact
from .result import LaunchResult
from .terminal import escape as _e
from .why_not import why_not
from .wording import origin_text

__all__ = ["Style", "describe", "render_text", "show_value", "to_json_dict"]


class Style:
    """How text is drawn: ANSI colour (only on a terminal, never with NO_COLOR) and a wrap width.

    The defaults draw plain, unwrapped text, which is what golden files, logs and pipes get."""

    _CODES: ClassVar[dict[str, str]] = {"bad": "1;31", "good": "32", "rule": "2", "name": "1", "warn": "33",
                                        "head": "1"}

    def __init__(self, colour: bool = False, width: int | None = None):
        self.colour = colour
        self.width = width if width and width >= 40 else None

    @classmethod
    def for_stream(cls, stream, mode: str = "auto") -> Style:
        tty = hasattr(stream, "isatty") and stream.isatty()
        colour = mode == "always" or (mode == "auto" and tty and not os.environ.get("NO_COLOR")
                                      and os.environ.get("TERM") != "dumb")
        columns = os.environ.get("COLUMNS", "")
        # an explicit COLUMNS wraps to that width on a terminal and in a pipe alike (shells set it without
        # exporting it, so a pipe sees it only when asked: COLUMNS=100 resolve ... | less); without it a pipe
        # or a file is never wrapped, so logs and golden files stay stable
        width = int(columns) if columns.isdigit() else None
        if tty and width is None:
            width = shutil.get_terminal_size().columns
        return cls(colour, width)

    def __call__(self, text: str, kind: str) -> str:
        """``text``, escaped, in the colour of ``kind``."""
        text = _e(text)
        return f"\033[{self._CODES[kind]}m{text}\033[0m" if self.colour and text else text

    def wrap(self, text: str, first: str, rest: str) -> list[str]:
        """``text`` (escaped) behind ``first``, continued behind ``rest`` when a width is known."""
        text = _e(text)
        if self.width is None:
            return [first + text]
        return textwrap.wrap(text, self.width, initial_indent=first, subsequent_indent=rest,
                             break_on_hyphens=False) or [first]


PLAIN = Style()


def _origin(f: FactUse) -> str:
    return f"{f.source}: {origin_text(f.origin)}"


class _Tree:
    """The facts behind a value or a conflict, as a tree: a derived fact's children are the facts
    its rule read.  A derived fact already drawn (here or in an earlier conflict) is drawn once;
    later it points back instead of repeating its subtree."""

    def __init__(self, res, style: Style):
        self.res = res
        self.style = style
        self.drawn: dict[str, str] = {}  # derived fact -> where it was drawn first

    def lines(self, facts, indent: str, where: str) -> list[str]:
        out: list[str] = []
        width = max((len(f.name) for f in facts), default=0)
        for i, f in enumerate(facts):
            last = i == len(facts) - 1
            out += self._node(f, indent, "└─ " if last else "├─ ", "   " if last else "│  ", width, where)
        return out

    def _node(self, f: FactUse, indent, branch, cont, width, where) -> list[str]:
        plain = f"{indent}{branch}{f'{f.name:<{width}}'} = {f'{show_value(f.value):<16}'} "
        head = f"{indent}{branch}{self.style(f'{f.name:<{width}}', 'name')} = {_e(f'{show_value(f.value):<16}')} "
        # a long origin wraps under the fact, behind the tree's own branch lines
        under = indent + cont + "   "
        d = self.res.outcome.derivations.get(f.name) if f.source in ("derived", "computed") else None
        if d is None:
            return self._wrapped(head, plain, _origin(f), under)
        kind = "computed" if d.source == "computed" else "derived"
        if f.name in self.drawn:
            return self._wrapped(head, plain, f"{kind}: {self.drawn[f.name]}", under)
        self.drawn[f.name] = f"see {where}"
        said = f"{kind} by {d.rule}"
        if not d.facts:
            return self._wrapped(head, plain, said + " (none of its branches matched)", under)
        if self.style.width is None or len(plain) + len(said) <= self.style.width:
            line = head + f"{kind} by {self.style(str(d.rule), 'rule')}"
            return [line] + self.lines(d.facts, indent + cont, where)
        return self._wrapped(head, plain, said, indent + cont + "│  ") + self.lines(d.facts, indent + cont, where)

    def _wrapped(self, head: str, plain: str, text: str, under: str) -> list[str]:
        """``head`` and ``text``, continued behind ``under`` when the line is wider than the style's width."""
        width = self.style.width
        if width is None or len(plain) + len(text) <= width:
            return [head + _e(text)]
        room = width - len(plain)
        first = textwrap.wrap(_e(text), room, break_on_hyphens=False, break_long_words=False) if room >= 20 else []
        if first and len(first[0]) > room:
            first = []
        # what does not fit behind the fact continues under it (all of it, when too little room is left)
        out = [head + first[0] if first else head.rstrip()]
        rest = _e(text)[len(first[0]):].strip() if first else _e(text)
        for piece in textwrap.wrap(rest, max(width - len(under) - 2, 20), break_on_hyphens=False):
            out.append(f"{under}  {piece}")
        return out


def render_text(res: LaunchResult, explain: bool = False, only: str | None = None, style: Style = PLAIN,
                verbose: bool = False) -> str:
    """The text report.  Without ``explain``: the values (or the conflicts: message, root cause, the allowed
    line, fixes).  ``explain`` adds, per value not at its declared default, its decider, the facts it read
    (one level) and, for kernel options, the values that lost; the conflicts' rules, evidence and fact trees.
    ``only`` (--explain OPTION) or ``verbose`` draw the whole derivation: the fact tree down to the inputs,
    the kernel evidence, and every value that lost with what removed it."""
    pack = res.pack
    lines: list[str] = []
    req = res.request
    full = verbose or only is not None
    model = req.model.get("model.architecture", (None, ""))[0]
    lines += style.wrap(f"platform: {req.platform.name} ({req.platform_source})", "", "          ")
    given = req.model.get("model.from_arch_only")
    source = given[1].where if given else ""
    lines += style.wrap(f"model:    {model or '(none given)'}" + (f" (from {source})" if model and source else ""),
                        "", "          ")
    if res.conflicts:
        lines.append("")
        lines += _conflicts(res, style, explain or verbose)
    elif explain and not full:
        lines.append("")
        lines += _brief_why(res, style)
    else:
        shown = [only] if only else [n for n in sorted(pack.options) if res.derivations[n].source != "fallback"]
        names = [n for n in shown if not pack.options[n].env]
        if names or not only:
            lines.append("")
            count = len(res.not_checked)
            unevaluated = f" ({count} SGLang check{'s' if count > 1 else ''} not evaluated: see below)" if count else ""
            lines.append(style(f"resolved configuration{unevaluated}:", "head"))
        width = max([len(n) for n in names] + [1])
        for name in names:
            d = res.derivations[name]
            lines += _row(style, name, width, show_value(d.value), _source_label(d))
        rest = sum(not o.env for o in pack.options.values()) - len(names)
        if not only and rest:
            lines += style.wrap(f"({rest} other options keep their declared defaults; --format json lists every value)",
                                "  ", "   ")
        variables = [n for n in shown if pack.options[n].env and res.derivations[n].value is not None]
        if variables:
            lines.append("")
            lines += [style(line, "head") for line in
                      style.wrap("environment SGLang sets (--format env prints it for a shell):", "", "  ")]
            width = max(len(n) for n in variables)
            for name in variables:
                d = res.derivations[name]
                lines += _row(style, name, width, res.env[name], _source_label(d))
    if res.unchecked:
        lines.append("")
        typed = " ".join(_flag_and_value(res, n) for n in res.unchecked)
        lines += style.wrap(f"not checked (no rule reads them; passed through unchanged): {typed}", "", "  ")
    if res.not_checked and not res.conflicts:
        lines.append("")
        lines += _not_checked(res, style)
    if res.not_decided and not res.conflicts:
        lines.append("")
        said = "; ".join(f"{name} ({why})" for name, why in res.not_decided.items())
        lines += style.wrap(f"not decided here (SGLang decides them when it starts): {said}", "", "  ")
    if res.warnings:
        lines.append("")
        lines.append(style("warnings:", "warn"))
        for w in res.warnings:
            lines += style.wrap(w.message, "  - ", "    ")
    if explain and full and (only or not res.conflicts):  # one option asked for is drawn beside the conflicts too
        lines.append("")
        lines.append(style("why:", "head"))
        # the launch options first, then the environment they lead to
        names = [only] if only else [n for n in sorted(pack.options, key=lambda n: (pack.options[n].env, n))
                                     if res.derivations[n].source != "fallback"]
        tree = _Tree(res, style)
        for name in names:
            lines += _derivation(res, name, tree, style, rerun=only is not None)
    return "\n".join(lines) + "\n"


def _not_checked(res, style: Style) -> list[str]:
    """The SGLang checks this launch could trigger that no rule evaluated: one line, then one per check."""
    count = len(res.not_checked)
    gate = " (--require-all-checks: not accepted)" if res.status == "unchecked" else ""
    lines = [style(f"not evaluated: {count} SGLang check{'s' if count > 1 else ''} that no rule encodes read what this "
                   f"launch sets{gate}:", "warn")]
    for c in res.not_checked:
        lines += style.wrap(f"{c.id} ({', '.join(_reads(c))}): {c.message}", "  - ", "    ")
    return lines


def _reads(check) -> list[str]:
    """What a check reads, as the contract lists it: ServerArgs fields, environment variables, model.<attr>."""
    return [*check.fields, *check.env, *(f"model.{m}" for m in check.model)]


def _row(style: Style, name: str, width: int, value: str, label: str) -> list[str]:
    """One row of the resolved configuration: name, value, who decided it (under the row when it would not fit)."""
    head = f"  {_e(f'{name:<{width}}')} = {style(f'{value:<16}', 'good')} "
    plain = len(f"  {_e(f'{name:<{width}}')} = {_e(f'{value:<16}')} ")
    if style.width is None or plain + len(label) + 2 <= style.width:
        return [head + f"({_e(label)})"]
    return [head.rstrip(), *style.wrap(f"({label})", "      ", "       ")]


def _brief_why(res, style: Style) -> list[str]:
    """The short --explain: each value not at its declared default with its decider, the facts its rule read
    (one level) and, for an option with a kernel role, the values that lost with what removed each."""
    pack = res.pack
    names = [n for n in sorted(pack.options, key=lambda n: (pack.options[n].env, n))
             if res.derivations[n].source != "fallback" and (not pack.options[n].env or n in res.env)]
    out = [style(line, "head") for line in style.wrap("why (each value not at its declared default; --explain OPTION "
                                                     "shows one in full, --verbose all):", "", "  ")]
    for name in names:
        d = res.derivations[name]
        shown = res.env[name] if pack.options[name].env else show_value(d.value)
        # wrapped plain, then the name and value coloured (escaped alike, so the lengths agree)
        lines = style.wrap(f"{name} = {shown}, by {_decider(res, d)}", "  ", "      ")
        plain = f"  {_e(name)} = {_e(shown)}"
        if lines[0].startswith(plain):
            lines[0] = f"  {style(name, 'name')} = {style(shown, 'good')}{lines[0][len(plain):]}"
        out += lines
        if d.facts:
            out += style.wrap("from: " + ", ".join(f"{f.name} = {show_value(f.value)}" for f in d.facts),
                              "    ", "      ")
        for a in d.adjustments:
            kind = "normalised" if a.normalize else "adjusted"
            out += style.wrap(f"{kind} {show_value(a.old)} -> {show_value(a.new)} by {a.rule.id}", "    ", "      ")
        kernel = res.outcome.facts.get(kernel_fact(name))
        if kernel is not None and d.value is not None:
            out += style.wrap(f"kernel on {res.request.platform.name}: {kernel.value} ({origin_text(kernel.origin)})",
                              "    ", "      ")
        if pack.options[name].kernel_role and d.source != "user":
            lost = [w for w in why_not(res, name) if any(r.kind in _FIRED for r in w.reasons)]
            said = "; ".join(f"{show_value(w.value)} ({_fired_reasons(w)})" for w in lost)
            out += style.wrap(f"lost: {said or 'no other default proposed a value'} (why not others: "
                              f"--explain {name})", "    ", "      ")
    rest = sum(not o.env for o in pack.options.values()) - sum(not pack.options[n].env for n in names)
    if rest:
        out += style.wrap(f"({rest} other options keep their declared defaults; --format json lists every value)",
                          "  ", "   ")
    return out


#: why a default that fired lost, in a few words
_FIRED = {"shadowed": "lower priority", "skipped": "its kernel cannot run here"}


def _fired_reasons(loser) -> str:
    by_kind: dict[str, list[str]] = {}
    for r in loser.reasons:
        if r.kind in _FIRED:
            by_kind.setdefault(_FIRED[r.kind], []).append(str(r.rule))
    return "; ".join(f"{kind}: {', '.join(rules)}" for kind, rules in by_kind.items())


def _decider(res, d) -> str:
    """Who decided a value, in a few words: the user's flag, or the rule with its file:line."""
    if d.source == "user":
        return f"you ({res.request.flags.get(d.name, res.pack.options[d.name].flag)})"
    if d.rule is None:
        return d.source
    kind = {"default": "default rule", "adjustment": "adjustment"}.get(d.source, d.source)
    return f"{kind} {d.rule}"


def _flag_and_value(res, name: str) -> str:
    """An unchecked field as the user typed it: the flag, then its value unless it is a switch."""
    flag = res.request.flags.get(name) or f"--{name.replace('_', '-')}"
    value = res.values.get(name)
    if isinstance(value, bool):
        return flag
    return f"{flag} {' '.join(map(show_value, value)) if isinstance(value, list) else show_value(value)}"


def _source_label(d) -> str:
    if d.source == "user":
        changed = [a for a in d.adjustments if a.old != a.new]
        if changed:  # a rule normalised what was typed into another value (--enable-dp-attention with dp 1: false)
            return f"you set {show_value(changed[0].old)}; normalised by {changed[-1].rule.id}"
        return "set by you"
    if d.source == "fallback":
        return "option default"
    return f"{d.source}: {d.rule.id}"


def _derivation(res, name: str, tree: _Tree, style: Style, rerun: bool = False) -> list[str]:
    d = res.derivations[name]
    out = [f"  {style(name, 'name')} = {style(show_value(d.value), 'good')}"]
    if d.source == "user":
        out += style.wrap(f"set by the user ({res.request.flags.get(name, res.pack.options[name].flag)})",
                          "    ", "      ")
    elif d.rule is not None:
        said = style.wrap(f"decided by: {d.source} rule {d.rule}", "    ", "      ")
        out += [line.replace(_e(str(d.rule)), style(str(d.rule), "rule")) for line in said]
        out += style.wrap(d.doc, "      ", "      ")
    if d.facts:
        out.append("    because:")
        out += tree.lines(d.facts, "      ", name)
    kernel = res.outcome.facts.get(kernel_fact(name))
    if kernel is not None and d.value is not None:
        why = res.outcome.facts[kernel_why_fact(name)].value
        out += style.wrap(f"kernel on {res.request.platform.name}: {kernel.value} ({why})", "    ", "      ")
    for a in d.adjustments:
        kind = "normalised" if a.normalize else "adjusted"
        out += style.wrap(f"{kind} {show_value(a.old)} -> {show_value(a.new)} by {a.rule}: {a.message}",
                          "    ", "      ")
    if d.candidates:
        out.append("    other candidates:")
        for c in d.candidates:
            out += style.wrap(f"{show_value(c.value)} from {c.rule} priority {c.priority}: {c.outcome} ({c.why})",
                              "      - ", "        ")
    option = res.pack.options[name]
    if d.source != "user" and (rerun or option.kernel_role):
        rerun = rerun and name in res.why_not  # the answers the core re-resolved (Resolution.answer_why_not)
        losers = res.why_not[name] if rerun else why_not(res, name)
        if losers:
            out += style.wrap(f"why not{' (each value typed instead, re-resolved)' if rerun else ''}:",
                              "    ", "      ")
            for w in losers:
                out += style.wrap(describe(w), "      - ", "        ")
    return out


def _root_cause(res, c) -> str:
    """What to change first: the flags the user typed that the conflict reads; else what the
    target itself brings (kernel facts, platform, model), which a flag cannot change."""
    first: dict[str, FactUse] = {}  # the first fact read of each option the user typed
    for f in c.facts:
        name = _typed_option(res, f)
        if name is not None:
            first.setdefault(name, f)
    typed = [FactUse(n, res.request.args.get(n, f.value), f.source, f.origin) for n, f in first.items()]
    if typed:
        flags = res.request.flags
        def flag(f):
            spelled = flags.get(f.name, res.pack.options[f.name].flag)
            return spelled if f.value is True else f"{spelled} {show_value(f.value)}"

        return "you set " + ", ".join(map(flag, typed))
    kernel = [f for f in c.facts if fact_name(f.name).is_kernel_verdict]
    if kernel:
        return "the kernels available on " + res.request.platform.name + " (" + ", ".join(
            f"{f.name} = {show_value(f.value)}" for f in kernel) + ")"
    given = [f for f in c.facts if f.source in ("platform", "model", "derived", "computed")] or list(c.facts)
    if not given:
        return f"the rule itself ({c.rule.id})"
    return "the target itself: " + ", ".join(f"{f.name} = {show_value(f.value)}" for f in given[:3])


#: fact sources that the target or the user's own flags bring (not a value some rule picked)
_GIVEN = ("platform", "model", "kernel", "user", "input", "installed", "request")


def _target_rooted(c) -> bool:
    """Whether a conflict reads only what the platform, the model, the kernels or the user's flags bring
    (nvfp4 requires Blackwell), not an option some rule picked (a backend default): such a root cause first."""
    return all(f.source in _GIVEN or (f.source in ("derived", "computed")
                                      and fact_name(f.name).family in ("platform", "model"))
               for f in c.facts)


def _typed_option(res, f: FactUse) -> str | None:
    """The option a fact the user typed is about (user.X and typed.X are what was typed for option X), or None."""
    if f.source != "user":
        return None
    parts = fact_name(f.name)
    name = (parts.option if parts.typed_by_user else None) or f.name
    return name if name in res.pack.options else None


def _typed(res, c) -> frozenset[str]:
    """The options the user typed that a conflict reads."""
    return frozenset(n for n in (_typed_option(res, f) for f in c.facts) if n)


def _fix_key(f) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in f.set.items())), tuple(sorted(f.unset))


def conflict_order(res: LaunchResult) -> list[tuple[Any, int | None]]:
    """The conflicts in the order they are shown, each with the index (in that order) of the conflict it
    follows from, or None.

    Order: conflicts that read only what the target and the user's flags bring first (the platform or
    model root cause), then the rest; each group in the resolution's order.

    "B follows from A" (B is folded under A) is data: A has fixes, B's fixes are among A's (as changes:
    ``set`` and ``unset``), and the options the user typed that B reads are among those A reads.  Folding B
    then hides no fix and no flag.  When both ways hold (the same fixes and flags), the earlier leads.  A
    conflict with no fix of its own (its rule reads only values the resolver picked) follows from the first
    conflict whose fixes there are.  Chains end at a conflict that follows from none."""
    ordered = [c for _, c in sorted(enumerate(res.conflicts), key=lambda ic: (not _target_rooted(ic[1]), ic[0]))]
    fixes = [frozenset(map(_fix_key, c.fixes)) for c in ordered]
    typed = [_typed(res, c) for c in ordered]

    def under(j: int, i: int) -> bool:
        if i == j or not fixes[i] or not (fixes[j] <= fixes[i] and typed[j] <= typed[i]):
            return False
        return not (fixes[j] == fixes[i] and typed[j] == typed[i]) or i < j

    parent: list[int | None] = [next((i for i in range(len(ordered)) if under(j, i)), None)
                                for j in range(len(ordered))]
    roots: list[int | None] = []
    for j in range(len(ordered)):
        i, seen = parent[j], {j}
        while i is not None and parent[i] is not None and i not in seen:
            seen.add(i)
            i = parent[i]
        roots.append(i)
    return list(zip(ordered, roots, strict=True))


def _conflicts(res: LaunchResult, style: Style, explain: bool = False) -> list[str]:
    ordered = conflict_order(res)
    folded = sum(1 for _, p in ordered if p is not None)
    count = f"{len(ordered)} conflict{'s' if len(ordered) != 1 else ''}"
    if folded and not explain:
        count += f" ({folded} folded under the one it follows from; --explain shows each in full)"
    out = [style(line, "bad") for line in style.wrap(count + ":", "", "  ")]
    tree = _Tree(res, style)
    for i, (c, parent) in enumerate(ordered, 1):
        if parent is not None and not explain:
            continue
        out.append("")
        lines = style.wrap(c.message, f"[{i}] ", "    ")  # wrapped plain, then coloured: codes take no width
        out += [style(f"[{i}] ", "bad") + lines[0][len(f"[{i}] "):], *lines[1:]]
        out += style.wrap(_root_cause(res, c), "    root cause: ", "      ")
        if parent is not None:
            out += style.wrap(f"follows from [{parent + 1}]: its fixes and the flags it reads are among "
                              f"[{parent + 1}]'s", "    ", "      ")
        if explain:
            out += [line.replace(_e(str(c.rule)), style(str(c.rule), "rule"))
                    for line in style.wrap(f"rule: {c.rule}", "    ", "      ")]
        if c.allowed is not None:
            # the option the rule restricts (a --strict refusal: the option its adjustment changes), which is
            # not always the first option involved (trtllm_mla's KV dtypes restrict kv_cache_dtype)
            restricted = getattr(res.pack.rule(c.rule.id), "option", None) or (c.options[0] if c.options else "")
            allowed = ", ".join(map(show_value, c.allowed)) or "none on this platform"
            out += style.wrap(f"allowed {restricted}: {allowed}", "    ", "      ")
        if explain:
            if c.evidence:
                out += style.wrap(c.evidence, "    evidence: ", "      ")
            for name, text in c.details:
                out += style.wrap(text, f"    {name}: ", "      ")
            out.append("    caused by:")
            out += tree.lines(c.facts, "      ", f"[{i}]")
        if c.fixes:
            out.append("    to fix, any one of:")
            for j, f in enumerate(c.fixes, 1):
                out += style.wrap(f.description, f"      {j}. ", "         ")
                typed = " ".join(f.argv)
                removed = " ".join(res.pack.options[n].flag for n in f.unset)
                how = "; ".join(x for x in (f"add {typed}" if typed else "", f"remove {removed}" if removed else "")
                                if x)
                # wrapped plain, then coloured (escaping is idempotent: a wrapped line has no control left)
                out += [f"{line[:9]}{style(line[9:], 'good')}" for line in style.wrap(how, " " * 9, " " * 11)]
                if f.also:  # the other options the fix changes (resolver/fixes.py)
                    changes = ", ".join(f"{n} {show_value(old)} -> {show_value(new)}" for n, old, new in f.also)
                    out += style.wrap(f"also changes {changes}", "         ", "           ")
        elif parent is None:
            fixed = [j for j, (other, _) in enumerate(ordered, 1) if other.fixes]
            if fixed:
                out += style.wrap(f"no change aimed at this conflict alone resolves the request; see the fixes of "
                                  f"[{fixed[0]}]", "    ", "      ")
            else:
                remedy = getattr(res.pack.rule(c.rule.id), "remedy", None)
                if remedy:
                    out += style.wrap("no change of launch options resolves this; what would:", "    ", "      ")
                    out += style.wrap(remedy, "      ", "      ")
                else:
                    out += style.wrap("no single or double change to the options resolves this; see the rule's doc:",
                                      "    ", "      ")
                    out += style.wrap(c.doc, "      ", "      ")
        if not explain:
            for k, (other, p) in enumerate(ordered, 1):
                if p == i - 1:
                    out += style.wrap(f"[{k}] {other.message}", "    also: ", "      ")
    if res.resolves_on:
        out.append("")
        out += style.wrap(f"the same launch resolves on: {', '.join(res.resolves_on)}", "", "  ")
    elif res.resolves_on is not None:
        out.append("")
        out.append("the same launch resolves on no other platform either")
    return out


def to_json_dict(res: LaunchResult, explain: bool = False, why_not: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON object.  Compact by default: the values, the environment, the conflicts (with the facts each
    rule read, its allowed set and its fixes), the warnings, what was not checked, a summary of the kernel
    verdicts and, for each option not at its declared default, who decided it.  ``explain`` adds the model
    facts' origins, every option's full derivation (facts read, candidates, adjustments, and for a kernel
    option the values that lost), the input and derived facts, the conflicts' docs and evidence.  ``why_not``:
    options whose derivation also lists every value that lost, each re-resolved (``--explain OPTION``)."""
    req = res.request
    facts = res.outcome.facts
    model = {f.name.split(".", 1)[1]: f.value for n, f in facts.items() if n.startswith("model.")}
    source = req.platform_how  # flag, detected, or given (a Platform object passed to the API)
    platform = {"name": req.platform.name, "source": source, "given_as": req.platform_source,
                "vendor": req.platform.vendor, "capability": req.platform.capability}
    ordered = conflict_order(res)
    conflicts = []
    for c, parent in ordered:
        entry = {**c.to_dict(), "root_cause": _root_cause(res, c), "follows_from": parent,
                 "remedy": getattr(res.pack.rule(c.rule.id), "remedy", None),
                 # each fix also as the whole command line to type, not only the change
                 "fixes": [{**f.to_dict(), "full_argv": list(typed_after_fix(res, f))} for f in c.fixes]}
        if not explain:
            for key in ("doc", "evidence", "details"):
                entry.pop(key, None)
        conflicts.append(entry)
    kernels = res.kernels
    out: dict[str, Any] = {"status": res.status, "platform": platform, "model": model, "values": dict(res.values),
                           "env": dict(sorted(res.env.items()))}
    if explain:
        model["origins"] = {f.name: origin_text(f.origin) for n, f in facts.items() if n.startswith("model.")}
        out["derivations"] = {n: _full_derivation(res, n, d, n in why_not) for n, d in res.derivations.items()}
        out["facts"] = {n: f.to_dict() for n, f in sorted(facts.items()) if n.startswith(("model.", "platform."))
                        or n in res.pack.facts}
        # what a derived fact read, by name: the inner nodes of the text's trees
        out["derived_facts"] = {n: res.outcome.derivations[n].to_dict()
                                for n in sorted({*res.pack.facts, *res.pack.computes})
                                if n in res.outcome.derivations}
    else:
        out["derivations"] = {n: _compact_derivation(d) for n, d in res.derivations.items()
                              if d.source != "fallback" or any(c.outcome == "skipped" for c in d.candidates)}
        kernels = {n: {k: v for k, v in verdict.items() if k != "why"} for n, verdict in kernels.items()}
    out.update({
        "conflicts": conflicts,
        "kernels": kernels,
        # when no change of options resolves the conflicts: the platforms where the same launch resolves
        "resolves_on": list(res.resolves_on) if res.resolves_on is not None else None,
        "unchecked": list(res.unchecked),
        # checks SGLang would make on this launch that no rule encodes: the answer claims no more than was checked
        "not_checked": [{"check": c.id, "site": c.site, "reads": _reads(c), "message": c.message}
                        for c in res.not_checked],
        # fields SGLang declares whose value cannot be known before it starts (null in values)
        "not_decided": [{"field": n, "why": why} for n, why in res.not_decided.items()],
        "warnings": [w.to_dict() for w in res.warnings],
    })
    return out


def _compact_derivation(d) -> dict[str, Any]:
    """Who decided a value (the contract's keys): the rule, the facts it read (name, value and source; their
    origins are in the full form) and the candidates that lost (with the defaults skipped because their kernel
    cannot run on the target, where the resolver departs from SGLang's pick: docs/divergences.md)."""
    return {"value": d.value, "source": d.source, "rule": d.rule.to_dict() if d.rule else None,
            "facts": [{"name": f.name, "value": f.value, "source": f.source} for f in d.facts],
            "candidates": [c.to_dict() for c in d.candidates]}


def _full_derivation(res, name: str, d, asked: bool) -> dict[str, Any]:
    out = d.to_dict()
    if asked and d.source != "user":
        losers = res.why_not[name] if name in res.why_not else why_not(res, name)
        out["why_not"] = [w.to_dict() for w in losers]
    return out


def describe(loser: Loser) -> str:
    """One loser as a line of text: the value, then its reasons (or that nothing stands against it)."""
    raised = [r.rule for r in loser.reasons if r.kind == "conflict"]
    texts = ([f"typed, it raises {', '.join(map(str, raised))}"] if raised else []) + \
        [r.text for r in loser.reasons if r.kind != "conflict"]
    said = "; ".join(texts) or "no default rule proposes it here"
    if loser.resolves:
        said += "; typed, it resolves"
    return f"{show_value(loser.value)}: {said}"
