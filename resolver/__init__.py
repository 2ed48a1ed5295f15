"""launch-resolver: resolve and explain an LLM server launch (SGLang 0.5.23's rules, declaratively).

Public API::

    from resolver import resolve, ConflictError
    res = resolve({"kv_cache_dtype": "fp8_e4m3"}, platform="h100", model_arch="DeepseekV32ForCausalLM")
    res.values["dsa_decode_backend"]; print(res.explain()); res.to_dict()

``import resolver`` loads only the exceptions: the resolver itself (rules, engine, kernel adapters)
is imported when one of its names is first used, so the command line can answer Ctrl-C during its
start-up, and a program that only catches ``ResolverError`` pays nothing for it.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    AmbiguousDefaultError,
    ConflictError,
    EngineError,
    InputError,
    ResolverError,
    RuleFileErrors,
    UnsupportedPythonError,
)

if TYPE_CHECKING:
    from .api import Resolution, get_engine, resolve, resolve_cross_node

__version__ = "0.1.0"

__all__ = [
    "resolve",
    "resolve_cross_node",
    "Resolution",
    "get_engine",
    "ResolverError",
    "ConflictError",
    "InputError",
    "RuleFileErrors",
    "AmbiguousDefaultError",
    "EngineError",
    "UnsupportedPythonError",
    "__version__",
]

#: the public names that live in resolver.api, imported on first use
_FROM_API = frozenset({"resolve", "resolve_cross_node", "Resolution", "get_engine"})


def __getattr__(name: str) -> Any:
    if name in _FROM_API:
        value = getattr(importlib.import_module(".api", __name__), name)
        globals()[name] = value  # once: later lookups find it without coming here
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
