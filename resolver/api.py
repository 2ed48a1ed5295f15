"""The embedding API: :func:`resolve` (raising on conflicts) and :func:`resolve_cross_node`, over the
core (resolver/core.py), whose names are handed on here for programs that embed the resolver."""
from __future__ import annotations

from typing import Any

from .core import Engine, Resolution, get_engine, resolve_request
from .crossnode import CrossNodeResult, check_roles, role_from_request
from .errors import ConflictError, InputError
from .platforms import Platform

__all__ = ["Engine", "Resolution", "get_engine", "resolve", "resolve_cross_node", "resolve_request"]


def resolve(args: dict[str, Any] | None = None, *, platform: str | Platform, model: dict | str | None = None,
            model_arch: str | None = None, rules: str | None = None, installed: dict[str, bool] | None = None,
            strict: bool = False, check_installed: bool = False, require_known_kernels: bool = False,
            draft_model: dict | None = None, gpu_memory_gb: float | None = None,
            env: dict[str, str] | None = None, gpus_per_node: int | None = None,
            model_files: dict[str, Any] | None = None) -> Resolution:
    """Resolve a launch configuration.  The result's ``not_checked`` names the checks SGLang would make on
    this launch that no rule encodes (resolver/checks.py).

    :param args: what the user set, as SGLang field names (``{"kv_cache_dtype": "fp8_e4m3"}``).
    :param platform: a platform name or alias (``"sm90"``, ``"h100"``).
    :param model: a config.json as a dict, or a path to one (or to its directory).
    :param model_arch: the architecture name, when no config is at hand.
    :param rules: a rules directory (default: the shipped rules).
    :param installed: which kernel packages are present on the target (``{"flashinfer": False}``).
    :param strict: refuse (as a conflict) any adjustment of a value the user typed, instead of warning.
    :param check_installed: count this machine's kernel packages (always so with ``platform="auto"``).
    :param require_known_kernels: a chosen backend whose kernel no adapter vouches for on the platform is
        a conflict (for CI gates), not a ``kernel-unknown`` warning.
    :param draft_model: the speculative draft checkpoint's config.json as a dict (default: looked up from
        ``speculative_draft_model_path`` like a model path, offline).
    :param gpu_memory_gb: memory of one GPU (default: the card the platform or alias names).
    :param gpus_per_node: GPUs in one node (default 8).
    :param env: environment variables already set where SGLang starts (``{"SGLANG_USE_AITER": "1"}``);
        the result's ``env`` holds the environment SGLang's processes get.
    :param model_files: the checkpoint's other files SGLang reads, beside a ``model`` given as a dict
        (``{"hf_quant_config.json": {...}}``); read from the folder for a path or ``model_path``.
    :returns: the :class:`Resolution`.
    :raises ConflictError: the configuration conflicts (a ``ValueError``; ``.conflicts`` has them all).
    :raises ResolverError: any other expected failure (bad input, broken rule files).
    """
    res = resolve_request(get_engine(rules), platform=platform, args=args, model=model, model_arch=model_arch,
                          installed=installed, strict=strict, check_installed=check_installed,
                          require_known_kernels=require_known_kernels, draft_model=draft_model,
                          gpu_memory_gb=gpu_memory_gb, env=env, gpus_per_node=gpus_per_node,
                          model_files=model_files)
    if res.conflicts:
        raise ConflictError(res)
    return res


def resolve_cross_node(roles: dict[str, dict[str, Any]], *, rules: str | None = None,
                       fixes: bool = True) -> CrossNodeResult:
    """Check that the servers of one deployment agree on what must match between them.

    :param roles: role name -> request in the batch format (``{"platform": "b200", "model_path": ...,
        "args": {"disaggregation_mode": "prefill", ...}}``): the prefill and decode servers of a PD
        layout, or the nodes of one multi-node server.
    :param rules: a rules directory (default: the shipped rules).
    :param fixes: search fixes for each mismatch (each checked by resolving the changed role again).
    :returns: a :class:`resolver.crossnode.CrossNodeResult`: ``status`` is ``agree``, ``mismatch``
        (``.mismatches``) or ``conflict`` (a role does not resolve alone: ``.roles[name].conflicts``).
    :raises ResolverError: bad input (an unknown option, platform or key in a role).
    """
    if not isinstance(roles, dict):
        raise InputError(f"roles must be a mapping of role name -> request, got {type(roles).__name__}")
    return check_roles(get_engine(rules), [role_from_request(n, r) for n, r in roles.items()], fixes=fixes)
