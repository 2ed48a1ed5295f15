"""Warnings as data: a stable code for tools and CI gates, and the message for people.

Codes in use: ``adjusted`` (a rule changed a value), ``deprecated`` (a deprecated flag or value
spelling), ``plugin`` / ``probe`` (a kernel adapter that did not load or whose probe did not
answer), ``unknown-architecture`` (neither the rules nor the model catalogue know the model's
architecture), ``kernel-unknown`` (no adapter vouches for a chosen kernel on this platform).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Notice"]


@dataclass(frozen=True)
class Notice:
    code: str
    message: str

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}
