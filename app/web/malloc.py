"""Large buffers go back to the operating system when freed (docs/security.md, "Requests in flight").

glibc serves an allocation over its mmap threshold (128 KiB at start) with its own mapping, unmapped on
free; but each time such a block is freed it raises the threshold to that block's size. After the first
2 MB request body, every later one came from the heap arenas, which glibc keeps: 40 parallel 2 MB bodies
left the server ~40 MB larger for good. Setting the threshold once fixes it (and turns the raising off).
Python has no binding for mallopt, hence ctypes; on another C library this does nothing."""
from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3                  # glibc's malloc.h
LARGE = 128 * 1024                     # glibc's own starting threshold


def return_large_buffers(threshold: int = LARGE) -> bool:
    """Fix glibc's mmap threshold at `threshold` bytes for this process; False where that is not glibc."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, threshold) == 1
