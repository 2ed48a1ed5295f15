"""launch-resolver: pick a consistent set of attention kernels for an LLM server launch.

Public API::

    from resolver import resolve, ConflictError
    res = resolve({"kv_cache_dtype": "fp8_e4m3"}, platform="h100", model_arch="DeepseekV32ForCausalLM")
    res.values["dsa_decode_backend"]; print(res.explain()); res.to_dict()
"""
from __future__ import annotations

from .api import Resolution, get_engine, resolve, resolve_cross_node
from .errors import (
    AmbiguousDefaultError,
    ConflictError,
    EngineError,
    InputError,
    ResolverError,
    RuleFileErrors,
    UnsupportedPythonError,
)

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
