"""Block pointers: lesson 03's appendix, the older way to load.

What you learn: how Triton's older tutorials load a tile, with a
block pointer, and why this project does not. The kernel below is
main.py's column_sum_kernel (Part 2: read it first) with
its loads made through a block pointer instead of offsets and
masks.

A block pointer describes x once: its shape, its strides, where
the first tile starts and the tile's shape. tl.load(tile) then
reads that tile, and tl.advance(tile, (rows, cols)) moves it.
Triton computes the addresses and, with boundary_check, reads 0
past x's edges.

Triton 3.9 removed block pointers (lesson 02's tensor
descriptors replace them). So this file runs its kernel only
where block_ptr_problem() finds that block pointers still work,
and says why it leaves the variant out elsewhere.
"""

import functools
import sys
from pathlib import Path

import torch

# The repository's root holds common and lesson_loader.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (before triton, which it configures)
import lesson_loader  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# main.py beside this file: the kernels, tiles and wrappers that
# this one shares.
lesson = lesson_loader.load_lesson(Path(__file__).resolve().parent)


# ## The kernel: column_sum_kernel, its loads by block pointer
# A block pointer's loads stop at x's edge, not at a chunk's
# end. A tile that ran past its chunk would add rows of the next
# chunk too: so this kernel relies on chunks of whole tiles.
# main.py's chunks() makes them: CHUNK_ROWS is a multiple of
# every BLOCK_M, and an x of fewer rows is a single chunk.
@triton.autotune(configs=lesson.CONFIGS, key=["N", "rows_per_chunk"])
@triton.jit
def column_sum_block_ptr_kernel(
    x_ptr, out_ptr, M, N, stride_m, stride_n, rows_per_chunk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    STAGES: tl.constexpr,  # all as in column_sum_kernel
):  # fmt: skip
    chunk, col_start = tl.program_id(1), tl.program_id(0) * BLOCK_N
    row_start = chunk * rows_per_chunk
    row_stop = tl.minimum(row_start + rows_per_chunk, M)
    # x's shape and strides, the first tile's place and shape,
    # and (1, 0): the order of x's dims in memory, columns
    # fastest.
    tile = tl.make_block_ptr(
        x_ptr, (M, N), (stride_m, stride_n), (row_start, col_start), (BLOCK_M, BLOCK_N), (1, 0)
    )
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in tl.range(row_start, row_stop, BLOCK_M, num_stages=STAGES):
        # boundary_check: past M or N (dims 0, 1), read 0
        values = tl.load(tile, boundary_check=(0, 1), padding_option="zero")
        acc += values.to(tl.float32)
        tile = tl.advance(tile, (BLOCK_M, 0))  # BLOCK_M rows down
    cols = col_start + tl.arange(0, BLOCK_N)
    sums = tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + chunk * N + cols, sums, mask=cols < N)


# main.py's wrapper, with this kernel.
column_sums_block_ptr = functools.partial(lesson.column_sums, kernel=column_sum_block_ptr_kernel)


# ## Does this Triton still have block pointers?
def block_ptr_problem():
    """Why block pointers don't run here, or None; found by trying."""
    try:  # arange, not randn, leaves torch's random state alone
        x = torch.arange(60.0, device=common.DEVICE).reshape(20, 3)
        lesson.check_variants(x, {"block_ptr": column_sums_block_ptr})
    except Exception as exc:  # a crash, or wrong sums
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"tl.make_block_ptr does not run on triton {triton.__version__}: {line[:120]}"
    return None


BLOCK_PTR_PROBLEM = block_ptr_problem()  # None: they work
UNAVAILABLE = {"block_ptr": BLOCK_PTR_PROBLEM} if BLOCK_PTR_PROBLEM else {}
VARIANTS = dict(lesson.VARIANTS)  # main.py's, and this one where it runs
if not UNAVAILABLE:
    VARIANTS["block_ptr"] = column_sums_block_ptr


# ## Timing (the harness: skip it on a first read)
def benchmark(rows, cols, dtype="float32"):
    """main.py's timing table, with this file's variant."""
    return lesson.benchmark(rows, cols, dtype, sys.modules[__name__])


SWEEP = lesson.SWEEP  # `make bench` times main.py's cases


def main(argv=None):
    for name, reason in UNAVAILABLE.items():
        print(f"variant {name!r} left out: {reason}")
    return lesson.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
