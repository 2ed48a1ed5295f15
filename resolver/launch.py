"""One launch to resolve, as typed data: what every front door builds and the core resolves.

The command line (:func:`resolver.argv.launch_request`), a JSON request (a ``resolve --batch`` line, a
cross-node role, the oracle's case format: :func:`resolver.json_request.launch_request`) and the Python
API (:func:`resolver.core.resolve_request`'s keywords) each build a :class:`LaunchRequest`;
:func:`resolver.core.resolve` takes nothing else.  It is frozen, and its options and their spellings are
read-only copies, so a what-if is a new request (a cross-node change: :meth:`changed`; inside the core,
a fix or a why-not changes the typed request the same way, ``Request.changed``), never an edit of the one
a caller holds.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from .errors import InputError
from .platforms import Platform

__all__ = ["LaunchRequest"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen(value: Any, what: str) -> Mapping[str, Any]:
    if value is None:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise InputError(f"{what} must be a mapping of option names to values, got {type(value).__name__}")
    return MappingProxyType(dict(value))


@dataclass(frozen=True)
class LaunchRequest:
    """A launch: the target, the model, the typed options, and how strictly to answer."""

    #: a platform name (``h100``, ``sm90``, ``auto`` to detect this machine's GPU) or a :class:`Platform`
    platform: str | Platform
    #: option name -> typed value (``tp_size``: 8); SGLang options the rules do not check are kept and named
    args: Mapping[str, Any] = field(default_factory=dict)
    #: the model's config.json as a dict, or a path or hub id to read it from (``--model-config``)
    model: dict | str | None = None
    model_arch: str | None = None  # an architecture name alone (``--model-arch``)
    flags: Mapping[str, str] = field(default_factory=dict)  # option name -> the flag spelling typed (messages quote it)
    notes: tuple[str, ...] = ()  # deprecations the front door saw (an old flag spelling)
    platform_source: str | None = None  # how the front door named the platform (``--platform h100``)
    installed: dict[str, bool] | None = None  # kernel package -> installed, where known
    strict: bool = False  # an adjustment of a typed value is a conflict
    check_installed: bool = False  # probe this machine's kernel packages
    require_known_kernels: bool = False  # an unknown kernel verdict is a conflict
    require_all_checks: bool = False  # an SGLang check left unevaluated makes the answer "unchecked"
    draft_model: dict | None = None  # the draft checkpoint's config.json
    gpu_memory_gb: float | None = None  # replaces the memory of the platform's card
    env: dict[str, str] | None = None  # environment variables set where SGLang starts
    gpus_per_node: int | None = None
    #: file name -> its JSON, beside a ``model`` config given as a dict (``hf_quant_config.json``)
    model_files: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # frozen: the options as checked, read-only copies of what was given (the other fields are checked where
        # they are read, each with its own message)
        object.__setattr__(self, "args", _frozen(self.args, "args"))
        object.__setattr__(self, "flags", _frozen(self.flags, "flags"))
        object.__setattr__(self, "notes", tuple(self.notes))

    @classmethod
    def of(cls, platform: str | Platform, **given: Any) -> LaunchRequest:
        """From keyword arguments (the API's), an unknown one an :class:`InputError` naming the known ones."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise InputError(f"unknown request field(s) {unknown}; known: {sorted(known)}")
        return cls(platform, **given)

    def changed(self, set_: Mapping[str, Any] = _EMPTY, unset: tuple[str, ...] = (),
                flags: Mapping[str, str] | None = None, **other: Any) -> LaunchRequest:
        """This launch with options set (``set_``) or removed (``unset``), and any other field replaced
        (``other``).  A changed or removed option no longer carries the flag spelling typed for it, unless
        ``flags`` gives the spelling to use."""
        args = {k: v for k, v in self.args.items() if k not in unset and k not in set_}
        args.update(set_)
        kept = {n: f for n, f in self.flags.items() if n in args and n not in set_}
        return replace(self, args=args, flags={**kept, **(flags or {})}, **other)
