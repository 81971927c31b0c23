"""The symbols an ELF object file defines, read from its symbol table (no LLVM).

numba caches a compiled kernel as its object code and the LLVM bitcode of the same module. On loading, it parses
the whole bitcode only to list the symbols the module defines (``JitEngine._load_defined_symbols``) — 2–3 ms per
kernel, about half of loading one. The object code's symbol table holds the same names:
:func:`defined_symbols` reads them (``jitcache.load_without_bitcode``; ``tests/test_jitcache.py`` checks that the
two lists agree on every cached kernel).
"""

from __future__ import annotations

import struct

_ELF64_LE = b"\x7fELF\x02\x01"
_SHT_SYMTAB = 2
_SHN_UNDEF = 0
#: symbol types of functions and data (``STT_NOTYPE``, ``STT_OBJECT``, ``STT_FUNC``): not sections or files
_NAMED_TYPES = (0, 1, 2)
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym


def defined_symbols(obj: bytes) -> set[str] | None:
    """The names of the functions and data a 64-bit little-endian ELF relocatable object defines (its symbol
    table's entries with a section); None when ``obj`` is not such a file or has no symbol table."""
    if obj[:6] != _ELF64_LE or len(obj) < 64:
        return None
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    if shentsize != _SECTION.size or shoff + shnum * shentsize > len(obj):
        return None
    sections = [_SECTION.unpack_from(obj, shoff + i * shentsize) for i in range(shnum)]
    for sh in sections:
        if sh[1] != _SHT_SYMTAB or sh[9] != _SYMBOL.size or sh[6] >= shnum:
            continue
        names = sections[sh[6]][4]  # the string table's offset
        out = set()
        for at in range(sh[4], sh[4] + sh[5], _SYMBOL.size):
            name, info, _other, shndx, _value, _size = _SYMBOL.unpack_from(obj, at)
            if name and shndx != _SHN_UNDEF and info & 0xF in _NAMED_TYPES:
                start = names + name
                out.add(obj[start:obj.index(b"\0", start)].decode())
        return out
    return None
