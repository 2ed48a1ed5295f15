"""Kernel adapters: what each kernel family can run, registered as facts (see base.py, docs/kernels.md)."""
from .base import AdapterError, Claim, KernelAdapter, Limit, Probe, package_probe
from .registry import registry, reload_registry

__all__ = ["AdapterError", "Claim", "KernelAdapter", "Limit", "Probe", "package_probe", "registry", "reload_registry"]
