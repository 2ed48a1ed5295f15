"""The launch command line as a request: the ``resolve`` parser (SGLang's flags, from the rule pack and the
flag catalogue, and the resolver's own), and the :class:`~resolver.launch.LaunchRequest` one parsed command
line asks for (also how ``resolve cross-node --role`` reads each role's flags)."""
from __future__ import annotations

import argparse
import difflib
from typing import Any

from .catalogue import catalogue
from .core import Engine
from .errors import InputError
from .jobs import add_jobs_argument
from .launch import LaunchRequest
from .rules import RulePack

__all__ = ["Parser", "UsageError", "build_parser", "launch_request", "parse", "pre_rules", "subcommand_parser",
           "suggest"]


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print and exit; we raise to report uniformly
        raise UsageError(message)


class _OptionValue(argparse.Action):
    """Store an option's value and remember which spelling (flag or deprecated alias) was typed.
    A valueless SGLang flag stores what SGLang's own action would (``--no-x`` stores False)."""

    def __call__(self, parser, namespace, values, option_string=None):
        value: Any = values
        if self.nargs == 0:
            known = catalogue().by_flag.get(option_string or "")
            set_to = known.value_of(option_string or "") if known is not None else None
            value = True if set_to is None else set_to
        setattr(namespace, self.dest, value)
        namespace._flags[self.dest] = option_string


def subcommand_parser(prog: str, description: str,
                      formats: tuple[str, ...] = ("text", "json")) -> argparse.ArgumentParser:
    """A subcommand's parser (``resolve NAME``): usage errors raise, every one takes ``--format``."""
    p = Parser(prog=f"resolve {prog}", description=description, allow_abbrev=False)
    p.add_argument("--format", choices=list(formats), default=formats[0], help=f"output format (default {formats[0]})")
    return p


def build_parser(pack: RulePack) -> argparse.ArgumentParser:
    p = Parser(
        prog="resolve",
        allow_abbrev=False,  # a prefix of one flag could silently become another
        description="Resolve and explain the attention-kernel launch options of an LLM server (SGLang 0.5.23 rules).",
        epilog=f"Every other SGLang {catalogue().sglang_version} server flag is accepted too (with argparse's unique "
               "abbreviations, --tp for --tp-size), carried through unchanged and listed as not checked. Subcommands "
               "(each with --help): 'resolve platforms' lists the target platforms and what this machine has; 'resolve "
               "kernels' the kernel adapters; 'resolve checks' every check SGLang makes at launch and which rules "
               "encode it; 'resolve matrix' what runs where; 'resolve lint' checks a rule pack; "
               "'resolve diff OLD NEW' compares two rule packs; 'resolve cross-node' checks that the prefill and "
               "decode servers (or the nodes) of one deployment agree. Exit status: 0 resolved, 1 conflict, 2 bad "
               "input, 3 internal error.",
    )
    g = p.add_argument_group("target")
    g.add_argument("--platform", default="auto",
                   help="target GPU: a name or alias (sm90, h100, b200, mi300x, ...; see 'resolve platforms'); "
                        "'auto' (the default) detects the local GPU")
    g.add_argument("--compute-capability", metavar="X.Y", help="spelled-out target capability, e.g. 9.0")
    g.add_argument("--gpu-memory-gb", type=float, metavar="GB",
                   help="memory of one GPU (default: the card the platform or alias names: h100 80, h200 141, "
                        "b200 180, mi300x 192, ...; see 'resolve platforms'); SGLang's memory defaults read it")
    g.add_argument("--vendor", choices=["nvidia", "amd"], default="nvidia", help="vendor for --compute-capability")
    g.add_argument("--model-config", metavar="PATH", help="a Hugging Face config.json, or a directory holding one")
    g.add_argument("--model-arch", metavar="NAME", help="the model architecture, when no config.json is at hand")
    g.add_argument("--check-installed", action="store_true",
                   help="count the kernel packages installed on this machine even for a named platform "
                        "(always so with --platform auto)")
    g.add_argument("--gpus-per-node", type=int, metavar="N",
                   help="GPUs in one node (default 8); multi-node layouts read it")
    g.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="an environment variable already set where SGLang starts (e.g. SGLANG_USE_AITER=1); "
                        "the resolution keeps or overwrites it as SGLang would")
    g.add_argument("--installed", action="append", default=[], metavar="PKG=yes|no",
                   help="whether a kernel package is present on the target (e.g. flashinfer=no)")
    o = p.add_argument_group("output")
    o.add_argument("--explain", nargs="?", const=True, default=False, metavar="OPTION",
                   help="say why each value is what it is, in short (or only OPTION's, in full: the fact tree, "
                        "the kernel evidence, and why not each other value); conflicts show their rule, evidence "
                        "and fact tree; JSON adds every derivation, the facts and the evidence")
    o.add_argument("--why-not", metavar="OPTION=VALUE",
                   help="resolve again with OPTION=VALUE typed and say what stands against it: the conflicts it "
                        "would raise, or the default rules that did not pick it")
    o.add_argument("--verbose", action="store_true",
                   help="with --explain (implied): every value's whole derivation, as --explain OPTION shows one")
    o.add_argument("--format", choices=["text", "json", "args", "env"], default="text",
                   help="output format: text (default), json, args (the resolved SGLang launch command, "
                        "ready to paste) or env (the environment variables SGLang sets, as shell export lines); "
                        "for args and env a conflict is reported on stderr instead")
    o.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                   help="colour the text output: auto (default) colours a terminal unless NO_COLOR is set")
    o.add_argument("--require-known-kernels", action="store_true",
                   help="make a chosen backend whose kernel no adapter vouches for on the target a conflict "
                        "(for CI gates) instead of a kernel-unknown warning")
    o.add_argument("--require-all-checks", action="store_true",
                   help="exit 1 when SGLang would make checks on this launch that no rule encodes (listed as "
                        "'not evaluated'; JSON not_checked), for CI gates; status 'unchecked'")
    o.add_argument("--strict", action="store_true",
                   help="refuse any change to a value you typed (e.g. a page-size snap) instead of warning")
    o.add_argument("--rules", metavar="DIR", help="use the rule files of DIR instead of the shipped ones")
    o.add_argument("--batch", metavar="FILE", help="resolve JSON Lines requests from FILE ('-' = stdin)")
    add_jobs_argument(o, 1, "the --batch lines (more than 1: a few lines per process are read ahead)")
    o.add_argument("--no-fixes", action="store_true",
                   help="report conflicts without searching for fixes (faster over a large batch)")
    cat = catalogue()
    opts = p.add_argument_group("launch options the rules check (SGLang flags)")
    for opt in sorted(pack.options.values(), key=lambda o: o.flag):
        if opt.env or opt.no_cli:  # an environment variable (--env NAME=VALUE), or a field with no flag
            continue
        sglang = cat.by_dest[opt.name].flags if opt.name in cat.by_dest else ()
        names = list(dict.fromkeys([opt.flag, *sglang, *opt.aliases]))
        help_ = opt.help
        if opt.choices:
            help_ += f" Choices: {', '.join(opt.choices)}."
        if opt.aliases:
            help_ += f" (deprecated alias: {', '.join(opt.aliases)})"
        if opt.type == "bool":
            opts.add_argument(*names, dest=opt.name, nargs=0, action=_OptionValue, default=None, help=help_)
        elif opt.opaque and opt.name in cat.by_dest and cat.by_dest[opt.name].nargs is not None:
            # a list-valued SGLang flag (--allowed-media-domains a b): as many words as SGLang takes
            opts.add_argument(*names, dest=opt.name, nargs=cat.by_dest[opt.name].nargs, action=_OptionValue,
                              default=None, metavar="VALUE", help=help_)
        else:
            opts.add_argument(*names, dest=opt.name, action=_OptionValue, default=None, metavar="VALUE", help=help_)
    # every other SGLang flag: accepted with SGLang's arity, typed later from the flag table, carried
    # through and listed as not checked (kept out of --help: there are five hundred of them)
    for action in cat.actions:
        if action.dest in pack.options:
            continue
        nargs: Any = 0 if not action.takes_value else action.nargs
        p.add_argument(*action.flags, dest=action.dest, nargs=nargs, action=_OptionValue, default=None,
                       help=argparse.SUPPRESS)
    return p


_OWN_FLAGS = ("--platform", "--compute-capability", "--gpu-memory-gb", "--gpus-per-node", "--env", "--vendor",
              "--model-config", "--model-arch", "--installed", "--strict", "--require-known-kernels",
              "--require-all-checks",
              "--check-installed", "--explain", "--verbose", "--why-not", "--format", "--color", "--rules", "--batch",
              "--jobs", "--no-fixes", "--help")


def _flag_names(pack: RulePack) -> list[str]:
    names = list(_OWN_FLAGS)
    for opt in pack.options.values():
        if not opt.no_cli:
            names += [opt.flag, *opt.aliases]
    return names + list(catalogue().by_flag)


def _expand_abbreviations(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """SGLang's argparse takes any unique prefix of its flags (``--tp 8`` is ``--tp-size 8``): expand
    those here, against SGLang's flags only, so the resolver's own flags never capture one."""
    out: list[str] = []
    for i, token in enumerate(argv):
        if token == "--":
            return out + argv[i:]
        name, eq, value = token.partition("=")
        if not name.startswith("--") or name in parser._option_string_actions:
            out.append(token)
            continue
        full = catalogue().expand(name)
        if isinstance(full, list):
            raise InputError(f"ambiguous flag '{name}': it could be {', '.join(full[:6])}"
                             f"{' ...' if len(full) > 6 else ''}. Type more of it.")
        out.append(token if full is None else full + eq + value)
    return out


def parse(argv: list[str], pack: RulePack) -> argparse.Namespace:
    parser = build_parser(pack)
    ns = argparse.Namespace(_flags={})
    ns, unknown = parser.parse_known_args(_expand_abbreviations(argv, parser), ns)
    if unknown:
        first = unknown[0]
        flag = first.split("=", 1)[0]
        close = difflib.get_close_matches(flag, _flag_names(pack), n=1) if flag.startswith("-") else []
        hint = f" Did you mean {close[0]}?" if close else ""
        what = "unknown flag" if flag.startswith("-") else "unexpected argument"
        raise InputError(f"{what} '{first}'.{hint} Run 'resolve --help' for the flags.")
    return ns


def pre_rules(argv: list[str]) -> str | None:
    # --rules decides which options exist, so it is read before the full parse
    for i, a in enumerate(argv):
        if a == "--rules" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--rules="):
            return a.split("=", 1)[1]
    return None


def _platform_arg(ns) -> tuple[Any, str | None]:
    from .platforms import platform_from_capability

    if ns.compute_capability:
        plat = platform_from_capability(ns.compute_capability, ns.vendor)
        return plat, f"--compute-capability {ns.compute_capability} --vendor {ns.vendor}"
    return ns.platform, None


def _environment(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise InputError(f"--env expects NAME=VALUE, got '{item}'")
        out[name] = value
    return out


def _installed(items: list[str]) -> dict[str, bool]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or value.lower() not in ("yes", "no", "true", "false", "1", "0"):
            raise InputError(f"--installed expects PKG=yes or PKG=no, got '{item}'")
        out[name] = value.lower() in ("yes", "true", "1")
    return out


def suggest(word, known) -> str:
    close = difflib.get_close_matches(word, sorted(known), n=1)
    return f" Did you mean '{close[0]}'?" if close else ""


def launch_request(engine: Engine, ns) -> LaunchRequest:
    """The launch one parsed command line asks for (also how ``resolve cross-node --role`` reads each
    role's flags)."""
    names = [*engine.pack.options, *(d for d in catalogue().by_dest if d not in engine.pack.options)]
    args = {name: getattr(ns, name) for name in names if getattr(ns, name, None) is not None}
    flags = dict(ns._flags)
    options = engine.pack.options
    notes = tuple(f"{typed} is deprecated; use {options[name].flag}"
                  for name, typed in sorted(flags.items()) if name in options and typed in options[name].aliases)
    given = [f for f, v in (("--model-config", ns.model_config), ("--model-arch", ns.model_arch),
                            ("--model-path", args.get("model_path"))) if v]
    if len(given) > 1:
        raise InputError(f"give one of --model-path, --model-config or --model-arch, not {' and '.join(given)}")
    platform, source = _platform_arg(ns)
    return LaunchRequest(platform, args, model=ns.model_config, model_arch=ns.model_arch, flags=flags, notes=notes,
                         platform_source=source, installed=_installed(ns.installed), strict=ns.strict,
                         check_installed=ns.check_installed, require_known_kernels=ns.require_known_kernels,
                         require_all_checks=ns.require_all_checks, gpu_memory_gb=ns.gpu_memory_gb,
                         env=_environment(ns.env), gpus_per_node=ns.gpus_per_node)


