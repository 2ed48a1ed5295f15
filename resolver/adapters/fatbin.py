"""Which GPU architectures an ahead-of-time CUDA library was compiled for, read from its file.

A CUDA extension keeps its GPU code in the ELF section ``.nv_fatbin``: a run of fatbin
containers, each a 16-byte header (magic 0xBA55ED50, version, header size, payload size) and
entries whose headers give the kind (1 = PTX, 2 = SASS), the header and padded payload sizes,
and at byte 28 the SM number.  Reading it needs no CUDA toolkit, no driver, and does not load
the library (loading ``flash_mla`` would pull CUDA into the process).  Layout as described in
cuobjdump (NVIDIA CUDA Binary Utilities, https://docs.nvidia.com/cuda/cuda-binary-utilities/) lists it;
the ELF container is read with pyelftools.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

__all__ = ["FatbinError", "GpuCode", "read_gpu_code"]

MAGIC = 0xBA55ED50
_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, payload size
_ENTRY = struct.Struct("<HHIQ")  # kind, version, header size, padded payload size
_SM_OFFSET = 28
_PTX, _SASS = 1, 2


class FatbinError(ValueError):
    """The file is not an ELF library, or its GPU code section is malformed."""


@dataclass(frozen=True)
class GpuCode:
    sass: tuple[int, ...]  # SM numbers with machine code (90, 100, ...); the a/f variant is not read
    ptx: tuple[int, ...]  # SM numbers with PTX (JIT-compilable by the driver for newer GPUs)

    def describe(self) -> str:
        sass = ", ".join(f"sm_{sm}" for sm in self.sass) or "none"
        return f"SASS {sass}" + (f"; PTX {', '.join(f'sm_{sm}' for sm in self.ptx)}" if self.ptx else "; no PTX")


def read_gpu_code(path: str) -> GpuCode | None:
    """The architectures in ``path``'s ``.nv_fatbin`` section; None if it has no such section (JIT)."""
    try:
        with open(path, "rb") as f:
            section = ELFFile(f).get_section_by_name(".nv_fatbin")
            data = section.data() if section is not None else None
    except (ELFError, OSError) as exc:
        raise FatbinError(f"{path}: cannot read as an ELF library ({exc})") from None
    if data is None:
        return None
    return _parse(data, path)


def _parse(data: bytes, path: str) -> GpuCode:
    sass: set[int] = set()
    ptx: set[int] = set()
    pos = 0
    while pos + _CONTAINER.size <= len(data):
        magic, _version, header_size, payload_size = _CONTAINER.unpack_from(data, pos)
        if magic != MAGIC:
            if not any(data[pos:pos + _CONTAINER.size]):  # zero padding between containers
                pos += 8
                continue
            raise FatbinError(f"{path}: bad fatbin magic {magic:#x} at offset {pos} of .nv_fatbin")
        entry, end = pos + header_size, pos + header_size + payload_size
        if header_size < _CONTAINER.size:
            raise FatbinError(f"{path}: fatbin container at offset {pos} has a {header_size}-byte header")
        if end > len(data):
            raise FatbinError(f"{path}: fatbin container at offset {pos} runs past the section")
        while entry + _SM_OFFSET + 4 <= end:
            kind, _v, entry_header, padded = _ENTRY.unpack_from(data, entry)
            if entry_header < _SM_OFFSET + 4:
                raise FatbinError(f"{path}: fatbin entry at offset {entry} has a {entry_header}-byte header")
            if entry_header + padded == 0:
                raise FatbinError(f"{path}: empty fatbin entry at offset {entry}")
            (sm,) = struct.unpack_from("<I", data, entry + _SM_OFFSET)
            (ptx if kind == _PTX else sass if kind == _SASS else set()).add(sm)
            entry += entry_header + padded
        pos = end
    return GpuCode(tuple(sorted(sass)), tuple(sorted(ptx)))
