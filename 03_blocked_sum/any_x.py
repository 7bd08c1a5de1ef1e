"""Lesson 03's Part 3 (optional): the kernel op.py runs.

What you learn: three changes that make main.py's split kernel
(Part 2: read it first) fit for a model. The kernel
below is main.py's column_sum_kernel with each change
marked. Given the same chunks, on a float32 or 16-bit x it adds
the same numbers in the same order, so it gives the same bits:
- (any x) float64 sums for a float64 x, and int64 offsets for
  an x of over 2^31 elements;
- (any M) one compile for every number of rows M;
- (plan) chunks picked from the GPU's SM count and x's width,
  where main.py cuts every x into chunks of 2048 rows.

Worked example of (any x): an int32 holds numbers up to
2^31 - 1 = 2147483647. In x of 65536 x 32768 float16 (2^31
elements, 4 GiB), row 65535 starts at offset 65535 * 32768 =
2147450880, and its last column, 32767, lies at 2147483647.
One more element, and an int32 offset wraps around to
-2147483648: a load there would read memory before x.
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

# main.py beside this file: Parts 1 and 2, whose tiles and second
# pass this file reuses.
lesson = lesson_loader.load_lesson(Path(__file__).resolve().parent)


# ## (any x) Float64 sums and int64 offsets
# A float32 sum keeps 24 bits of each number; a float64 x has
# 53. Summed in float32, a float64 x would lose its small
# terms: so a float64 x sums in float64. x_ptr.dtype.element_ty
# is x's dtype, which Triton knows while it compiles: the `if`
# that picks acc_dtype is settled then, and costs nothing when
# the kernel runs.
#
# Offsets are int32 unless made otherwise: the program id,
# tl.arange and the int arguments below 2^31 are all int32, and
# so are their products. Turned into int64 before they multiply
# a stride, the offsets reach any element.
#
# ## (any M) One compile for every M
# At a launch, Triton looks at each int argument: is it 1, or a
# multiple of 16? It compiles a separate version of the kernel
# for each answer (it "specializes"), so that the compiler can
# use what it knows, such as rows that start 16-aligned. A
# compile takes a fraction of a second, and a model's M changes
# with every batch. do_not_specialize=["M"] keeps one version
# for all M.
@triton.jit(do_not_specialize=["M"])  # (any M)
def split_any_x_kernel(
    x_ptr, out_ptr, M, N, stride_m, stride_n, rows_per_chunk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    STAGES: tl.constexpr,  # all as in main.py's column_sum_kernel
):  # fmt: skip
    x_dtype = x_ptr.dtype.element_ty  # (any x)
    acc_dtype = tl.float64 if x_dtype == tl.float64 else tl.float32
    chunk = tl.program_id(1)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    col_offsets = cols.to(tl.int64) * stride_n  # (any x) int64
    row_start = chunk * rows_per_chunk
    row_stop = tl.minimum(row_start + rows_per_chunk, M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=acc_dtype)
    for i0 in tl.range(row_start, row_stop, BLOCK_M, num_stages=STAGES):
        rows = i0 + tl.arange(0, BLOCK_M)
        offsets = rows.to(tl.int64)[:, None] * stride_m + col_offsets[None, :]  # (any x)
        mask = (rows < row_stop)[:, None] & col_mask[None, :]
        tile = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        acc += tile.to(acc_dtype)
    sums = tl.sum(acc, axis=0)
    tl.store(out_ptr + chunk * N + cols, sums.to(out_ptr.dtype.element_ty), mask=col_mask)


# ## (plan) How many chunks
# plan_splits picks the chunks, by three rules:
# - Aim at PROGRAMS_PER_SM = 4 programs per SM, so that every
#   SM has work. (More gives shorter chunks, and a larger
#   partial for the second pass to add up.)
# - Split no x of ROW_ALIGN rows or fewer, and no x so wide that
#   its column blocks alone give half those programs: they keep
#   the SMs busy without a second pass.
# - Make a chunk a multiple of ROW_ALIGN = 256 rows, the tallest
#   BLOCK_M in CONFIGS, and an unsplit x's one chunk a power of
#   2, as main.py does. Then no tile hangs over a chunk's end,
#   and the autotuner, keyed on rows_per_chunk, tunes seldom.
PROGRAMS_PER_SM, ROW_ALIGN = 4, 256


# functools.lru_cache remembers plan_splits' answer for each
# (M, N) it has seen: op.py asks at every call.
@functools.lru_cache(maxsize=1024)
def plan_splits(M, N, device=common.DEVICE):
    """(splits, rows_per_chunk). For 1048576 x 64 on an H200:
    4 * 132 = 528 programs wanted, one column block, so chunks
    of cdiv(1048576, 528) = 1986 rows, rounded up to 2048."""
    on_gpu = device.type == "cuda"
    sms = torch.cuda.get_device_properties(device).multi_processor_count if on_gpu else 1
    # A CPU counts as one SM, so that the tests' small x splits.
    wanted = PROGRAMS_PER_SM * sms
    # The autotuner picks BLOCK_N only inside the launch, after
    # this plan, so the plan counts blocks of 128 columns. A
    # wrong guess costs speed, never correctness.
    column_blocks = triton.cdiv(max(N, 1), 128)
    if M <= ROW_ALIGN or 2 * column_blocks >= wanted:
        # One chunk: M = 1000 and 1001 share a tuning, at 1024.
        return 1, triton.next_power_of_2(max(M, 1))
    rows = triton.cdiv(M, triton.cdiv(wanted, column_blocks))
    rows_per_chunk = triton.cdiv(rows, ROW_ALIGN) * ROW_ALIGN
    return triton.cdiv(M, rows_per_chunk), rows_per_chunk


# Tuned as main.py's column_sum_kernel is (Part 2).
column_sum_any_x_kernel = triton.autotune(configs=lesson.CONFIGS, key=["N", "rows_per_chunk"])(
    split_any_x_kernel
)


def column_sums_any_x(x):
    """x.sum(0) as main.py's column_sums, by this file's kernel:
    for x of any float dtype and any size."""
    M, N = x.shape
    out = torch.empty(N, dtype=x.dtype, device=x.device)
    splits, rows_per_chunk = plan_splits(M, N, x.device)  # (plan)
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), splits)  # noqa: E731
    # (any x) A float64 x keeps float64 partial sums.
    sum_dtype = torch.promote_types(x.dtype, torch.float32)
    partial = out if splits == 1 else x.new_empty((splits, N), dtype=sum_dtype)
    column_sum_any_x_kernel[grid](x, partial, M, N, *x.stride(), rows_per_chunk)
    if splits > 1:
        sum_partials(partial, out)
    return out


def sum_partials(partial, out, kernel=split_any_x_kernel):
    """main.py's second pass, by this file's kernel (or a form of
    it that op.py passes): partial as one chunk of P rows."""
    P, N = partial.shape
    grid, tile = sum_partials_tile(P, N)
    args = (partial, out, P, N, *partial.stride(), P)  # P: rows_per_chunk
    kernel[grid](*args, **tile)


def sum_partials_tile(P, N):
    """(grid, tile) of the second pass on P rows of N partial
    sums: main.py's tile for it. (op.py works it out once a
    shape: each triton.cdiv costs the host about 2 us.)"""
    block_m = min(triton.next_power_of_2(P), 256)
    block_n = max(16, min(256, 4096 // block_m))
    grid = (triton.cdiv(N, block_n),)
    return grid, dict(BLOCK_M=block_m, BLOCK_N=block_n, STAGES=1)


VARIANTS = {**lesson.VARIANTS, "any_x": column_sums_any_x}


# ## Timing (the harness: skip it on a first read)
def benchmark(rows, cols, dtype="float32"):
    """main.py's timing table, with this file's variant."""
    return lesson.benchmark(rows, cols, dtype, sys.modules[__name__])


SWEEP = lesson.SWEEP  # `make bench` times main.py's cases


def main(argv=None):
    return lesson.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
