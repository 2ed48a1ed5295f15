"""The core: an engine per rule pack, and one launch (a :class:`~resolver.launch.LaunchRequest`) resolved
into a :class:`Resolution`.

Rule packs are loaded, checked and compiled once per directory and content, then cached
(one durable-rules host per pack); each call is one resolution on a fresh sid.  The front doors
build the launch (the command line: resolver/argv.py; a batch line or cross-node role:
resolver/json_request.py) and come through :func:`resolve`; the embedding API (resolver/api.py)
and the argparse integration through :func:`resolve_request`, whose keywords are the launch's fields.
"""
from __future__ import annotations

import copy
import os
import re
import threading
import weakref
from collections import OrderedDict
from typing import Any

from .adapters import registry as kernel_registry
from .adapters.base import Probe
from .catalogue import catalogue as flag_catalogue
from .checks import Check, not_checked, platform_facts
from .compiler import CompiledPack, compile_pack
from .draft import GEMMA4_ASSISTANTS, draft_facts, find_draft
from .engine import DurableMatcher, Engine, ReferenceMatcher
from .errors import InputError
from .explain import render_text, to_json_dict
from .installed import installed_facts
from .launch import LaunchRequest
from .loader import check_rule_files, default_rules_dir, load_rules, rule_files
from .model import model_facts
from .model_source import CHECKPOINT_FILES, read_checkpoint
from .notices import Notice
from .options import CONSUMED, coerce_args, split_unchecked
from .platforms import Platform, find_platform
from .provenance import Origin
from .resolution import ConflictReport, Outcome, Request, run
from .result import LaunchResult
from .rules import RulePack
from .safe_io import absolute_path
from .verdicts import kernel_verdicts, kernel_warnings
from .whatif import rerun_why_not

__all__ = ["Engine", "LaunchRequest", "Resolution", "env_text", "get_engine", "resolve", "resolve_request"]


# A small LRU: every rules directory and version gets its own engine (~5.5 MB, most of it the
# durable-rules ruleset in C memory), so a process that sees many packs must let old ones go.
_MAX_ENGINES = 4
_ENGINES: OrderedDict[tuple, Engine] = OrderedDict()
_ENGINES_LOCK = threading.Lock()
# matchers of evicted engines that nobody uses any more, freed at the next get_engine: a caller may
# still hold an evicted Engine (and resolve with it), so its ruleset is freed only when it is gone
_RETIRED: list[DurableMatcher] = []


def _signature(directory: str) -> tuple:
    files = rule_files(directory)
    return (directory, tuple((f, os.stat(f).st_mtime_ns, os.stat(f).st_size) for f in files))


def _load_and_compile(directory: str) -> tuple[RulePack, CompiledPack]:
    pack = load_rules(directory)
    return pack, compile_pack(pack)


def _engine_of(built: tuple[RulePack, CompiledPack]) -> Engine:
    pack, compiled = built
    return Engine(pack, compiled, ReferenceMatcher(compiled))


def get_engine(rules: str | None = None) -> Engine:
    """The engine for a rules directory (default: the shipped rules), built once and cached."""
    if rules is not None and not isinstance(rules, (str, os.PathLike)):
        raise InputError(f"--rules: expected a path, got {type(rules).__name__}")
    if rules is not None and not os.fspath(rules).strip():  # an empty --rules is a mistake, not "the shipped rules"
        raise InputError("--rules: the path is empty")
    check_rule_files(rules)  # a NUL in the path, a FIFO or /dev/zero link as a rule file: refused before any read
    directory = absolute_path(rules or default_rules_dir(), "--rules")
    try:
        key = _signature(directory)
    except OSError:
        key = (directory,)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            from .pack_cache import cached_pack

            engine = cached_pack(directory, lambda: _load_and_compile(directory), _engine_of)
            # the callback only queues (it runs wherever the last reference drops, maybe inside a
            # resolution); atexit=False: the process's end frees everything anyway
            weakref.finalize(engine, _RETIRED.extend, engine.built).atexit = False
            _ENGINES[key] = engine
            while len(_ENGINES) > _MAX_ENGINES:
                _ENGINES.popitem(last=False)
        else:
            _ENGINES.move_to_end(key)
        while _RETIRED:  # evicted engines nobody holds any more (just now, or since an earlier call)
            _RETIRED.pop().close()
        return engine


class Resolution(LaunchResult):
    """The result of one resolution (plain data: :class:`~resolver.result.LaunchResult`), with the engine it
    came from, for what a caller asks next: an explanation, the JSON object, why not another value."""

    def __init__(self, engine: Engine, request: Request, outcome: Outcome, conflicts: tuple[ConflictReport, ...],
                 notes: tuple[Notice, ...] = (), resolves_on: tuple[str, ...] | None = None,
                 not_checked: tuple[Check, ...] = (), require_all_checks: bool = False):
        # the pack's option lists are worked out once per engine: this runs on every resolution
        decided = _without_env(engine, outcome.values)
        for n in engine.opaque_options:
            decided[n] = copy.deepcopy(decided[n])  # a caller's to change
        derivations = {n: outcome.derivations[n] for n in engine.pack.options}
        kernels = kernel_verdicts(engine.pack, outcome)
        warnings = tuple(notes) + outcome.warnings
        if not request.require_known_kernels:  # with the gate on, each unknown verdict is a conflict instead
            warnings += kernel_warnings(engine.pack, request, derivations, kernels)
        super().__init__(
            pack=engine.pack, request=request, outcome=outcome,
            values={**request.unchecked, **decided},
            env={**request.environment, **{n: env_text(outcome.values[n]) for n in engine.env_options
                                           if outcome.values.get(n) is not None}},
            derivations=derivations, conflicts=conflicts, warnings=warnings, kernels=kernels,
            unchecked=tuple(sorted([n for n in request.unchecked if n not in CONSUMED] + list(request.environment))),
            not_checked=not_checked,
            not_decided={n: why for n, why in engine.undecidable_options if outcome.values.get(n) is None},
            resolves_on=resolves_on, require_all_checks=require_all_checks)
        self.engine = engine

    def answer_why_not(self, *options: str) -> Resolution:
        """Work out, for each option, every value that lost, each typed instead and re-resolved
        (``why_not``: what ``--explain OPTION`` shows); returns this resolution."""
        for name in options:
            if name not in self.why_not:
                self.why_not[name] = rerun_why_not(self.engine, self, name)
        return self

    def explain(self, option: str | None = None, verbose: bool = False) -> str:
        """Why each value is what it is, as text: in short (each value's decider, the facts its rule read, the
        values a kernel option lost); ``option``: that option's whole derivation and why not each other value;
        ``verbose``: every option's whole derivation."""
        if option is not None and option not in self.derivations:
            raise InputError(f"explain: no such option '{option}'")
        if option is not None:
            self.answer_why_not(option)
        return render_text(self, explain=True, only=option, verbose=verbose)

    def to_dict(self, explain: bool = True) -> dict[str, Any]:
        """The JSON object.  The API keeps the full form by default (every derivation, the facts, the
        evidence: what ``resolve --format json --explain`` prints); ``explain=False`` gives the compact
        form ``resolve --format json`` and ``--batch`` print (docs/explain.md)."""
        return to_json_dict(self, explain=explain)


def _platform(platform: str | Platform) -> tuple[Platform, str, str]:
    """The target, how it was known (given as an object, detected, named by a flag) and that in words."""
    if isinstance(platform, Platform):
        return platform, "given", "given"
    if not isinstance(platform, str):
        raise InputError(f"platform must be a name, got {platform!r}")
    if platform.strip().lower() == "auto":
        from .detect import detect_platform

        detection = detect_platform()
        return detection.platform, "detected", detection.how
    found = find_platform(platform)
    return found, "flag", "--platform " + platform


def resolve_request(engine: Engine, *, platform: str | Platform, args: dict[str, Any] | None = None,
                    model: dict | str | None = None, model_arch: str | None = None,
                    flags: dict[str, str] | None = None, notes: tuple[str, ...] = (),
                    platform_source: str | None = None, fixes: bool = True,
                    installed: dict[str, bool] | None = None, strict: bool = False,
                    check_installed: bool = False, require_known_kernels: bool = False,
                    draft_model: dict | None = None, gpu_memory_gb: float | None = None,
                    env: dict[str, str] | None = None, gpus_per_node: int | None = None,
                    model_files: dict[str, Any] | None = None, require_all_checks: bool = False) -> Resolution:
    """Resolve without raising on conflicts: :func:`resolve` on the :class:`LaunchRequest` of these keywords
    (its fields, documented there)."""
    launch = LaunchRequest(platform, {} if args is None else args, model=model, model_arch=model_arch,
                           flags={} if flags is None else flags, notes=notes, platform_source=platform_source,
                           installed=installed, strict=strict, check_installed=check_installed,
                           require_known_kernels=require_known_kernels, require_all_checks=require_all_checks,
                           draft_model=draft_model, gpu_memory_gb=gpu_memory_gb, env=env, gpus_per_node=gpus_per_node,
                           model_files=model_files)
    return resolve(engine, launch, fixes=fixes)


def resolve(engine: Engine, launch: LaunchRequest, fixes: bool = True) -> Resolution:
    """Resolve one launch without raising on conflicts (every front door comes here); ``fixes``: search and
    check fixes for a refused launch.  Without ``draft_model``, ``--speculative-draft-model-path`` is
    looked up; ``require_all_checks`` makes a launch whose SGLang checks are not all evaluated "unchecked"."""
    platform, model, model_arch = launch.platform, launch.model, launch.model_arch
    gpu_memory_gb, gpus_per_node = launch.gpu_memory_gb, launch.gpus_per_node
    flags, draft_model = launch.flags, launch.draft_model
    plat, how, source = _platform(platform)
    if gpu_memory_gb is not None:
        plat = plat.with_memory(gpu_memory_gb)
        source = f"{source}, --gpu-memory-gb {gpu_memory_gb:g}"
    if gpus_per_node is not None:
        plat = plat.with_gpus_per_node(gpus_per_node)
        source = f"{source}, --gpus-per-node {gpus_per_node}"
    # the local machine's packages count when resolving for the local GPU, or when asked
    kernels = kernel_registry()
    probed: dict[str, tuple[bool, Origin]] = {}
    if launch.check_installed or how == "detected":
        kernels = kernels.checking_installed()
        for adapter in kernels.adapters:
            probe = (kernels.probed or {}).get(adapter.name)
            if adapter.package and isinstance(probe, Probe):
                state = f"{adapter.package} {probe.version or ''}".strip()
                found = "found" if probe.installed else "not found"
                probed[adapter.package.replace("-python", "")] = (probe.installed, Origin(
                    "installed", "probed", f"probed on this machine: {state} {found}"))
    rule_args, unchecked, arg_notes = split_unchecked(engine.pack, dict(launch.args), dict(flags))
    declared, environment = _environment(engine.pack, launch.env)
    typed, more_notes, spelled = coerce_args(engine.pack, {**rule_args, **declared}, dict(flags))
    deprecations = [Notice("deprecated", n) for n in (*launch.notes, *arg_notes, *more_notes)]
    files = _checkpoint_files(launch.model_files)
    if isinstance(model, str):
        checkpoint = read_checkpoint(model, "--model-config")
        model, files = checkpoint.config, {**checkpoint.files, **files}
    facts, config = _model(model, model_arch, unchecked.get("model_path"), files)
    engine.check_architecture(facts)
    if draft_model is not None:
        draft = draft_facts(draft_model, "the draft config given")
    else:
        draft = draft_facts(*find_draft(typed.get("speculative_draft_model_path")))
    request = Request(plat, launch.platform_source or source, facts, typed, dict(flags),
                      installed_facts(launch.installed, probed), spelled, bool(launch.strict), kernels, unchecked,
                      require_known_kernels=bool(launch.require_known_kernels), draft=draft, environment=environment,
                      platform_how=how)
    outcome = run(engine.compiled, engine.matcher, request)
    conflicts, elsewhere = outcome.conflicts, None
    if outcome.conflicts and fixes:
        from .fixes import attach_fixes, platforms_that_resolve  # a resolved launch (most calls) needs no fix search

        conflicts = attach_fixes(engine, request, outcome)
        # no change of options helps: say where the same launch would resolve
        elsewhere = platforms_that_resolve(engine, request) if not any(c.fixes for c in conflicts) else None
    # the adapters' own problems (a plugin that did not load, a probe without an answer) go on every
    # result they could change, so a verdict never silently rests on a missing adapter
    kernel_notices = kernels.warnings()
    return Resolution(engine, request, outcome, conflicts,
                      (*deprecations, *_architecture_notices(engine, facts), *_draft_notices(outcome, draft),
                       *kernel_notices), elsewhere, _not_checked(engine, request, outcome, config),
                      bool(launch.require_all_checks))


def _not_checked(engine: Engine, request: Request, outcome: Outcome, config: dict | None) -> tuple[Check, ...]:
    """The SGLang checks this launch could trigger that no rule evaluated (resolver/checks.py)."""
    options = engine.pack.options
    typed = {**request.unchecked, **{n: v for n, v in request.args.items() if not options[n].env}}
    decided = _without_env(engine, outcome.values)
    env = {**request.environment, **{n: env_text(v) for n, v in request.args.items() if options[n].env}}
    plat = request.platform
    return not_checked(typed, decided, flag_catalogue().defaults, env, config,
                       platform_facts(plat.vendor, plat.major, plat.minor))

def _without_env(engine: Engine, values: dict[str, Any]) -> dict[str, Any]:
    """The resolved values less the environment variables among the options (a copy)."""
    out = dict(values)
    for n in engine.env_options:
        out.pop(n, None)
    return out


#: a POSIX environment variable name (IEEE Std 1003.1, 8.1): what a shell takes after ``export``
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_text(value: Any) -> str:
    """A value as SGLang writes it into the environment (``str()``: ``False``, ``2048``)."""
    return value if isinstance(value, str) else str(value)


def _environment(pack, env: Any) -> tuple[dict[str, str], dict[str, str]]:
    """The request's environment split into the variables rules declare and the rest."""
    if env is None:
        return {}, {}
    if not isinstance(env, dict):
        raise InputError(f"env must be a mapping of variable names to values, got {type(env).__name__}")
    declared: dict[str, str] = {}
    other: dict[str, str] = {}
    for name, value in env.items():
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            # a shell reads an exported name as code (`--format env` under eval): only POSIX names pass
            raise InputError(f"environment variable name {ascii(name)} is not a POSIX name (letters, digits "
                             "and '_', not starting with a digit)")
        if not isinstance(value, str) or "\0" in value:
            raise InputError(f"environment variable {name} must be a string, got {value!r}")
        option = pack.options.get(name)
        (declared if option is not None and option.env else other)[name] = value
    return declared, other


def _checkpoint_files(files: Any) -> dict[str, Any]:
    """A request's ``model_files`` (the oracle's request format): file name -> JSON object; only the files
    SGLang's resolution reads (model_source.CHECKPOINT_FILES) are kept, the others change nothing."""
    if files is None:
        return {}
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, dict) for k, v in files.items()):
        raise InputError("model_files must map checkpoint file names to their JSON objects "
                         "(e.g. {\"hf_quant_config.json\": {...}})")
    return {name: value for name, value in files.items() if name in CHECKPOINT_FILES}


def _model(model: dict | None, model_arch: str | None, model_path: Any,
           files: dict[str, Any]) -> tuple[dict[str, tuple[Any, Origin]], dict | None]:
    """Model facts from a config (with ``files`` beside it), else from SGLang's ``model_path`` as an
    operator names a model (a path, a Hugging Face id in the local cache, a catalogued id: their files
    are read there), else from an architecture alone (its representative catalogued config, when
    there is one); and the config.json they came from (None for a bare architecture)."""
    from .model_source import find_model, representative

    config: dict | None
    if model is None and model_arch is None and model_path is not None:
        found = find_model(model_path)
        config = found.config
        facts = model_facts(config, source=_describe(found), files={**found.files, **files})
    elif model is None and isinstance(model_arch, str) and representative(model_arch.strip()) is not None:
        entry = representative(model_arch.strip())
        assert entry is not None  # tested just above
        config = entry.config
        facts = model_facts(config, source=f"{_describe(entry)[:-1]}, representative of the architecture)",
                            files=entry.files)
    else:
        config = model
        facts = model_facts(model, model_arch, files=files)
    if isinstance(model_path, str):  # SGLang copies it into other fields (an MTP draft is the target itself)
        facts["model.path"] = (model_path, Origin("flag", where="--model-path"))
    return facts, config


def _draft_notices(outcome: Outcome, draft: dict[str, tuple[Any, Origin]]) -> tuple[Notice, ...]:
    """What the rules do not model about this draft: say so, never resolve it silently."""
    arch = draft.get("draft.architecture", (None, ""))[0]
    if arch in GEMMA4_ASSISTANTS and outcome.values.get("speculative_algorithm") == "EAGLE":
        return (Notice("not-modelled", f"SGLang 0.5.23 runs a {arch} draft as Frozen-KV MTP "
                                       "(speculative_algorithm FROZEN_KV_MTP), which these rules do not model: the "
                                       "speculative settings shown are EAGLE's and were not checked for it"),)
    return ()


def _describe(found) -> str:
    if found.origin == "catalogue":
        return f"{found.canonical_id} config (catalogue)"  # 'resolve models' cites its source
    if found.origin == "hf-cache":
        return f"{found.where} (Hugging Face cache)"
    return found.where


def _architecture_notices(engine: Engine, facts: dict) -> tuple[Notice, ...]:
    """An architecture neither the rules nor the model catalogue know resolves with generic
    answers: say so, never silently."""
    from .model_source import representative

    arch = facts.get("model.architecture", (None, ""))[0]
    if not isinstance(arch, str) or arch in engine.architectures.values() or representative(arch) is not None:
        return ()
    return (Notice("unknown-architecture",
                   f"the model architecture '{arch}' is not known to the rules or the model catalogue: "
                   "only generic rules applied (see 'resolve models' for known models)"),)
