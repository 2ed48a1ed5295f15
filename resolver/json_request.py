"""A JSON request (a ``resolve --batch`` line, a ``resolve cross-node`` role, the oracle's case format) as the
:class:`~resolver.launch.LaunchRequest` it asks for, checked: part of the core, which the batch tool and
cross-node both read."""
from __future__ import annotations

from typing import Any

from .errors import ResolverError
from .launch import LaunchRequest

__all__ = ["REQUEST_KEYS", "launch_request"]

#: the keys of a batch request (also read by resolve diff --requests): the contract's, plus the
#: oracle's request format (SGLang's own resolution run as a test tool), so any of its cases can be
#: fed unchanged: ``model_path``, ``model_files`` (the checkpoint's files beside ``model``: the
#: ``hf_quant_config.json`` SGLang reads is read, others change nothing), ``draft_model`` (the draft's
#: config.json, read for the draft facts: resolver/draft.py), ``platform_overrides``, ``env`` and the labels
#: ``model_name``, ``draft_model_name``, ``recipe`` (which change nothing)
REQUEST_KEYS = _KEYS = frozenset({"id", "platform", "model", "model_arch", "model_path", "args", "installed",
                                  "strict", "model_files", "draft_model", "model_name", "draft_model_name", "recipe",
                                  "platform_overrides", "env", "require_known_kernels", "require_all_checks"})
#: platform overrides the oracle format allows; ``has_*`` say whether a kernel package is installed
_OVERRIDES = {"gpu_memory_gb", "gpus_per_node", "has_flashinfer", "has_triton_kernels", "nvidia_driver_version"}
_OVERRIDE_PACKAGES = {"has_flashinfer": "flashinfer", "has_triton_kernels": "triton_kernels"}


def _installed(req: dict[str, Any]) -> dict[str, bool] | None:
    """``installed``, with the oracle's ``platform_overrides.has_*`` read as the same facts."""
    overrides = req.get("platform_overrides") or {}
    if not isinstance(overrides, dict):
        raise ResolverError("'platform_overrides' must be an object")
    unknown = sorted(set(overrides) - _OVERRIDES)
    if unknown:
        raise ResolverError(f"unknown platform override(s) {unknown}; known: {sorted(_OVERRIDES)}")
    installed = req.get("installed")
    if installed is not None and not isinstance(installed, dict):
        raise ResolverError("'installed' must be an object of package: true|false")
    out = dict(installed or {})
    for key, package in _OVERRIDE_PACKAGES.items():
        if key in overrides:
            if not isinstance(overrides[key], bool):
                raise ResolverError(f"'platform_overrides.{key}' must be true or false")
            if package == "flashinfer":  # triton_kernels has no adapter yet: nothing reads it
                out.setdefault(package, overrides[key])
    return out or None


def launch_request(req: dict[str, Any], strict: bool = False, require_known_kernels: bool = False,
                   require_all_checks: bool = False) -> LaunchRequest:
    """The launch a batch request asks for, checked (also each role of ``resolve cross-node``); ``strict``,
    ``require_known_kernels`` and ``require_all_checks`` are the defaults a request may override."""
    unknown = sorted(set(req) - _KEYS)
    if unknown:
        raise ResolverError(f"unknown request key(s) {unknown}; known: {sorted(_KEYS)}")
    if "platform" not in req:
        raise ResolverError("the request has no 'platform'")
    if not isinstance(req.get("args", {}), dict):
        raise ResolverError("'args' must be an object of option: value")
    if not isinstance(req.get("strict", False), bool):
        raise ResolverError("'strict' must be true or false")
    if req.get("model") is not None and not isinstance(req["model"], dict):
        raise ResolverError("'model' must be an object of config.json fields")
    if req.get("draft_model") is not None and not isinstance(req["draft_model"], dict):
        raise ResolverError("'draft_model' must be an object of the draft's config.json fields")
    for key in ("require_known_kernels", "require_all_checks"):
        if not isinstance(req.get(key, False), bool):
            raise ResolverError(f"'{key}' must be true or false")
    if not isinstance(req.get("env") or {}, dict):
        raise ResolverError("'env' must be an object of variable: value")
    args = dict(req.get("args") or {})
    if req.get("model_path") is not None:
        args.setdefault("model_path", req["model_path"])
    overrides = req.get("platform_overrides") or {}
    installed = _installed(req)  # checks platform_overrides too
    return LaunchRequest(req["platform"], args, model=req.get("model"), model_arch=req.get("model_arch"),
                         installed=installed, strict=bool(req.get("strict", strict)),
                         require_known_kernels=req.get("require_known_kernels", require_known_kernels),
                         require_all_checks=req.get("require_all_checks", require_all_checks),
                         draft_model=req.get("draft_model"), gpu_memory_gb=overrides.get("gpu_memory_gb"),
                         env=req.get("env"), gpus_per_node=overrides.get("gpus_per_node"),
                         model_files=req.get("model_files"))
