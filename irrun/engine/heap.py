"""glibc's heap between runs: freed arrays kept for the next run rather than given back and faulted in again.

A run allocates and frees every layer's arrays, megabytes each. glibc serves an allocation above its mmap
threshold with a fresh mapping, and gives the free memory at the top of its heap back to the system once it
exceeds its trim threshold; both thresholds adapt, but only up to the largest mapped array freed so far. So
each run of a CNN mapped again the pages the last run had given back, and the kernel zeroed them page by
page: 5,000-19,000 page faults per run of a MobileNet-sized model, a third of its CPU time (measured).
Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536, and any fixed threshold turns the adaptive
ones off: every array over 128 KiB is then a fresh mapping (a ResNet run measured 3x the CPU time so).

`keep_freed_memory(peak)`, called by every run, sets both thresholds once per process to glibc's adaptive
ceiling (mmap 32 MiB, trim 64 MiB), and raises the trim threshold to the run's planned peak of activations
when that is larger: afterwards the process may hold that much freed heap for reuse. It leaves malloc alone
when the process configured it (MALLOC_TRIM_THRESHOLD_ or MALLOC_MMAP_THRESHOLD_ set, as Dask's nannies do:
irrun/scale/parallel.py raises the thresholds only while its own tasks run there), on other C libraries, and when
`TUNE` is False.
"""
from __future__ import annotations

import functools
import os
import sys
from contextlib import contextmanager

TUNE = True  # False: irrun never calls mallopt outside a configured Dask worker's tasks
TRIM_VARIABLE, MMAP_VARIABLE = "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)
ROOMY_TRIM, ROOMY_MMAP = 64 << 20, 32 << 20  # glibc's adaptive thresholds at their largest
GLIBC_DEFAULT_MMAP = 128 << 10

_trim_set = 0  # the trim threshold this process was given here (0: not yet)


@functools.cache
def glibc():
    """The C library when it is glibc (mallopt's parameters are glibc's), else None."""
    import ctypes
    import platform

    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def configured() -> bool:
    """Whether this process's malloc thresholds were set by its environment."""
    return TRIM_VARIABLE in os.environ or MMAP_VARIABLE in os.environ


def keep_freed_memory(peak: int = 0) -> None:
    """Before a run whose plan peaks at `peak` bytes of tensors: the thresholds of the module's docstring."""
    global _trim_set
    trim = max(ROOMY_TRIM, peak)
    if trim <= _trim_set or not TUNE or configured():
        return
    libc = glibc()
    if libc is None:
        return
    if not _trim_set:
        libc.mallopt(M_MMAP_THRESHOLD, ROOMY_MMAP)
    libc.mallopt(M_TRIM_THRESHOLD, min(trim, 2**31 - 1))  # mallopt takes an int
    _trim_set = trim


@contextmanager
def roomy_while_configured():
    """In a process whose environment fixed malloc's trim threshold (a Dask worker's), the thresholds of
    `keep_freed_memory` while the block runs; afterwards the memory goes back to the system and the
    environment's thresholds are put back, so the process's memory use between blocks is what its owner
    configured."""
    libc = glibc() if TRIM_VARIABLE in os.environ else None
    if libc is None:
        yield
        return
    libc.mallopt(M_MMAP_THRESHOLD, ROOMY_MMAP)
    libc.mallopt(M_TRIM_THRESHOLD, ROOMY_TRIM)
    try:
        yield
    finally:
        libc.mallopt(M_TRIM_THRESHOLD, _environ_int(TRIM_VARIABLE, ROOMY_TRIM))
        libc.mallopt(M_MMAP_THRESHOLD, _environ_int(MMAP_VARIABLE, GLIBC_DEFAULT_MMAP))
        libc.malloc_trim(0)


def _environ_int(name: str, default: int) -> int:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return default
