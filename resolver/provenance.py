"""Fact names and where each fact came from, as data.

A resolution's facts have names in a few families (``user.<option>``, ``typed.<option>``,
``given.<option>``, ``kernel.<option>``, ``kernel.<option>_why``, ``model.*``, ``draft.*``, ``platform.*``,
``installed.*``, and the options and derived facts themselves), and each fact has an
:class:`Origin`: the flag the user typed, the rule (file:line) that decided it, the platform and
how it was known, the model config field it was read from, the package state given, probed or
assumed, the kernel adapter whose verdict it is.  The modules that decide (resolution, fixes,
lint, diff) build and read these as data; only the renderers turn them into words
(:func:`resolver.wording.origin_text`).  No module takes apart a name or a sentence by hand.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .rules import RuleRef

__all__ = [
    "FactName",
    "Origin",
    "OriginKind",
    "fact_name",
    "given_fact",
    "kernel_fact",
    "kernel_why_fact",
    "typed_fact",
    "user_fact",
]

USER, TYPED, GIVEN, KERNEL = "user.", "typed.", "given.", "kernel."
_WHY = "_why"


def user_fact(option: str) -> str:
    """The fact holding what the user typed for ``option`` (null when not typed), before any rule."""
    return USER + option


def typed_fact(option: str) -> str:
    """The fact holding the user's own spelling of ``option`` (a deprecated alias stays as typed)."""
    return TYPED + option


def given_fact(option: str) -> str:
    """Whether the user typed a value for ``option`` (true or false): what a rule may read of a json option, whose
    value (a list, an object) no engine fact can hold."""
    return GIVEN + option


def kernel_fact(option: str) -> str:
    """The kernel adapters' verdict (supported, unsupported, refused, unknown, none) on ``option``'s value."""
    return KERNEL + option


def kernel_why_fact(option: str) -> str:
    """The evidence behind :func:`kernel_fact`'s verdict."""
    return KERNEL + option + _WHY


FactFamily = Literal["user", "typed", "given", "kernel", "kernel_why", "model", "draft", "platform", "installed",
                     "other"]


@dataclass(frozen=True)
class FactName:
    """A fact name taken apart: its family and, for the per-option families, the option it is about."""

    family: FactFamily
    option: str | None = None

    @property
    def typed_by_user(self) -> bool:
        """``user.<option>``, ``typed.<option>`` or ``given.<option>``: what was typed for the option."""
        return self.family in ("user", "typed", "given")

    @property
    def is_kernel_verdict(self) -> bool:
        return self.family == "kernel"


def fact_name(name: str) -> FactName:
    """The family of fact ``name`` and the option it concerns (the one place fact names are parsed)."""
    if name.startswith(USER):
        return FactName("user", name[len(USER):])
    if name.startswith(TYPED):
        return FactName("typed", name[len(TYPED):])
    if name.startswith(GIVEN):
        return FactName("given", name[len(GIVEN):])
    if name.startswith(KERNEL):
        base = name[len(KERNEL):]
        if base.endswith(_WHY):
            return FactName("kernel_why", base[: -len(_WHY)])
        return FactName("kernel", base)
    families: tuple[FactFamily, ...] = ("model", "draft", "platform", "installed")
    for family in families:
        if name.startswith(family + "."):
            return FactName(family)
    return FactName("other")


OriginKind = Literal[
    "flag",  # typed by the user: ``where`` is the flag and value as typed
    "not-typed",  # user.<option> / typed.<option> of an option the user did not type
    "rule",  # decided by a rule: ``rule`` and ``how`` (default, derived, no-match, adjustment, computed, fallback)
    "platform",  # the target: ``where`` names it and its source, ``how`` is flag, detected or given (an API object)
    "model",  # a model config field: ``where`` is the config, ``field`` the field read (``how`` absent: not there)
    "draft",  # the draft checkpoint's config, like model
    "installed",  # a kernel package: ``how`` is given, probed or assumed; ``where`` says what was given or found
    "kernel",  # a kernel verdict: ``adapter`` names the adapter that spoke (None: none did)
    "request",  # a request-wide switch (--require-known-kernels): ``where`` says whether it was asked
    "before-adjustment",  # the value an adjustment read, before it changed it
]


@dataclass(frozen=True)
class Origin:
    """Where a fact's value came from.  Fields beyond ``kind`` are set where they apply."""

    kind: OriginKind
    how: str = ""
    where: str = ""
    field: str = ""
    rule: RuleRef | None = None
    adapter: str | None = None
