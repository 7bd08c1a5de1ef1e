"""Lesson 04's Part 4 (optional): the kernels op.py runs.

What you learn: four changes that make main.py's tuned
kernels (Parts 2 and 3: read them first) fit for a model. The
kernels below are those, with each change marked; they compute
the same numbers:
- (wide) loads of 16 bytes with one instruction, by telling
  the compiler what the sizes of x allow;
- (any x) float64 sums for a float64 x, and int64 offsets for
  an x of over 2^31 elements;
- (rows) one compile for every number of rows;
- (sum) the backward's second pass as a kernel of our own.

Worked example of (wide): x of 1000 x 1000 float32, one row of
a tile is 32 columns, and each of the 128 threads of a 128 x 32
tile loads 32 values of x. As single loads: 32 instructions. As
wide loads of 4 float32 (16 bytes): 8 instructions, when the
compiler can prove each group of 4 lies side by side, starts
on a 16-byte boundary, and is masked all or none. At D = 1000,
no multiple of 16, Triton gives it too few facts to prove that:
this file shows how to tell it more. `python
04_weighted_sum/wide.py --asm` counts the loads it compiles.
"""

import math
import sys
from pathlib import Path

import torch

# The repository's root holds common and lesson_loader.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402, F401  (before triton, which it configures)
import lesson_loader  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# main.py beside this file: Parts 1 to 3, whose tiles and P
# rule the kernels below reuse.
lesson = lesson_loader.load_lesson(Path(__file__).resolve().parent)
CONFIGS = lesson.CONFIGS  # (tune)


# ## (wide) What the compiler must know
# A thread can load 16 bytes (4 float32, or 8 16-bit values)
# with one instruction, a wide load. The compiler emits one only
# where it can prove, for each group of 4 float32 columns that a
# thread loads, that:
# - the 4 lie next to each other in memory: stride_col is 1;
# - the first sits on a 16-byte boundary in every row: x's start
#   and stride_row are multiples of 16 bytes;
# - the mask is the same for all 4, since one instruction loads
#   all or none: D is a multiple of 4.
#
# ## (wide) What Triton tells it, and what it does not
# At a launch, Triton tells the compiler a few facts about the
# arguments: whether an int is 1 or divides by 16, and whether a
# pointer lies on a 16-byte boundary. It compiles a version of
# the kernel for each set of facts: it "specializes". That
# covers stride_col and x's start. But D = 1000 divides by 4,
# not by 16, so Triton states no fact about it.
#
# ## (wide) Telling it ourselves
# alignment() (below) passes D_ALIGN = 4 (8 for 16-bit x) as a
# constexpr. The kernel then masks with
#     D_aligned = (D // D_ALIGN) * D_ALIGN
# which is still 1000, but now visibly a multiple of 4. The
# constexpr X_ROW_ALIGN does the same for stride_row. For
# forward_wide_kernel at D = 1000 with 128 x 32 tiles, the PTX
# (the GPU's assembly) holds, for x and w together:
#     X_ROW_ALIGN = D_ALIGN = 1:  0 wide loads, 33 scalar ones
#     X_ROW_ALIGN = D_ALIGN = 4:  9 wide loads, 0 scalar ones
def alignment(x2d):
    """The largest powers of 2, up to 16 bytes' worth of elements,
    that divide x2d's row stride and D."""
    vector = 16 // x2d.element_size()  # elements in 16 bytes
    row_align = math.gcd(x2d.stride(0), vector)
    return dict(X_ROW_ALIGN=row_align, D_ALIGN=math.gcd(x2d.shape[1], vector))


# ## (any x) Float64, and offsets past 2^31
# Parts 1 to 3 keep to float32 sums and int32 offsets. A
# float64 x sums in float64: x_ptr.dtype.element_ty is x's
# dtype, known while Triton compiles, so the `... if ... else
# ...` below is settled then. In an x of over 2^31 elements,
# row * stride_row passes 2^31 - 1, where an int32 wraps
# around: so the kernels cast row_ids and cols to int64 first.
#
# ## (rows) One compile for every number of rows
# Triton compiles up to three versions of a kernel for each
# int argument: for 1, for a multiple of 16, for others (it
# "specializes"). Each takes a fraction of a second. rows
# changes with every batch: do_not_specialize=["rows"] keeps
# one version for all rows.
#
# ## The kernels, each change marked
# forward_wide_kernel is main.py's forward_kernel (Part 2, Part
# 1's kernel tuned) with the lines of Part 4 added.
@triton.autotune(configs=CONFIGS, key=["D"])  # (tune)
@triton.jit(do_not_specialize=["rows"])  # (rows)
def forward_wide_kernel(
    x_ptr, w_ptr, y_ptr, rows, D, stride_row, stride_col,
    X_ROW_ALIGN: tl.constexpr,  # (wide) a power of 2 dividing stride_row
    D_ALIGN: tl.constexpr,  # (wide) a power of 2 dividing D
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # (tune)
):  # fmt: skip
    row_ids = tl.program_id(0) * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    # (wide) The same two values, written so that the compiler
    # sees that they divide by X_ROW_ALIGN and D_ALIGN.
    stride_row = (stride_row // X_ROW_ALIGN) * X_ROW_ALIGN
    D_aligned = (D // D_ALIGN) * D_ALIGN
    row_starts = row_ids.to(tl.int64) * stride_row  # (any x)
    acc_dtype = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=acc_dtype)
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D_aligned  # (wide) cols < D, as before
        col_offsets = cols.to(tl.int64) * stride_col  # (any x)
        offsets = row_starts[:, None] + col_offsets[None, :]
        mask = row_mask[:, None] & col_mask[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        acc += x.to(acc_dtype) * w.to(acc_dtype)[None, :]
    y = tl.sum(acc, axis=1)
    tl.store(y_ptr + row_ids, y.to(y_ptr.dtype.element_ty), mask=row_mask)


# backward_wide_kernel is main.py's backward_kernel (Part 3)
# with the lines of Part 4 added: (wide) for its loads of x and
# its stores of grad_x.
@triton.autotune(configs=CONFIGS, key=["D"])  # (tune)
@triton.jit(do_not_specialize=["rows"])  # (rows)
def backward_wide_kernel(
    x_ptr, w_ptr, grad_y_ptr, grad_x_ptr, partial_ptr,
    rows, D, stride_row, stride_col,  # all as before
    X_ROW_ALIGN: tl.constexpr, D_ALIGN: tl.constexpr,  # (wide)
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # (tune)
):  # fmt: skip
    x_dtype = x_ptr.dtype.element_ty  # (any x), as forward's
    acc_dtype = tl.float64 if x_dtype == tl.float64 else tl.float32
    t, p = tl.program_id(0), tl.program_id(1)  # (split)
    P = tl.num_programs(1)  # (split) grid axis 1's size
    cols = t * D_TILE + tl.arange(0, D_TILE)
    D_aligned = (D // D_ALIGN) * D_ALIGN  # (wide) as forward's
    col_mask = cols < D_aligned  # (wide)
    stride_row = (stride_row // X_ROW_ALIGN) * X_ROW_ALIGN  # (wide)
    col_offsets = cols.to(tl.int64) * stride_col  # (any x)
    # (split) One D tile per program: w is loaded once, not per step.
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(acc_dtype)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=acc_dtype)
    for row_tile in range(p, tl.cdiv(rows, ROWS_TILE), P):  # (split)
        row_ids = (row_tile * ROWS_TILE + tl.arange(0, ROWS_TILE)).to(tl.int64)  # (any x)
        row_mask = row_ids < rows
        mask = row_mask[:, None] & col_mask[None, :]
        grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0).to(acc_dtype)
        offsets = (row_ids * stride_row)[:, None] + col_offsets[None, :]
        # Load x before storing grad_x (main.py says why).
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        grad_x = grad_y[:, None] * w[None, :]
        # (wide) grad_x's rows lie D apart. Written as D_aligned,
        # the compiler sees that it divides by D_ALIGN: the
        # stores of grad_x are wide too.
        out = (row_ids * D_aligned)[:, None] + cols[None, :]
        tl.store(grad_x_ptr + out, grad_x.to(x_dtype), mask=mask)
        acc += x.to(acc_dtype) * grad_y[:, None]
    # (split) A program with no row tile stores zeros.
    sums = tl.sum(acc, axis=0)
    tl.store(partial_ptr + p.to(tl.int64) * D + cols, sums, mask=col_mask)


# ## (sum) The second pass as a kernel
# main.py's backward_tuned ends with partial.sum(0) and a cast
# to w's dtype: two launches. sum_partials_wide_kernel is one,
# and it too adds partial's rows in a fixed order. On an H200
# it took 6 to 9.5 us where PyTorch's two took 10 to 12.5 us
# (GPU time, in a CUDA graph). With (any x): partial's dtype for
# acc (float64 for a float64 x), and int64 offsets, for a
# partial of over 2^31 elements.
@triton.jit
def sum_partials_wide_kernel(
    partial_ptr, grad_w_ptr, P, D,  # partial: a contiguous (P, D)
    P_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * D_TILE + tl.arange(0, D_TILE)
    acc_dtype = partial_ptr.dtype.element_ty  # (any x)
    acc = tl.zeros((P_TILE, D_TILE), dtype=acc_dtype)
    for i0 in range(0, P, P_TILE):  # rows of partial, in order
        part_rows = i0 + tl.arange(0, P_TILE)
        mask = (part_rows < P)[:, None] & (cols < D)[None, :]
        offsets = part_rows.to(tl.int64)[:, None] * D + cols[None, :]  # (any x)
        acc += tl.load(partial_ptr + offsets, mask=mask, other=0.0)
    sums = tl.sum(acc, axis=0).to(grad_w_ptr.dtype.element_ty)
    tl.store(grad_w_ptr + cols, sums, mask=cols < D)


def sum_partials(partial, weight, kernel=sum_partials_wide_kernel):
    """grad_w: partial's rows added up, by `kernel` (op.py passes
    this one, made traceable by torch.compile)."""
    P, D = partial.shape
    grad_w = torch.empty_like(weight)
    grid, tile = sum_partials_tile(P, D)
    kernel[grid](partial, grad_w, P, D, **tile)
    return grad_w


def sum_partials_tile(P, D):
    """(grid, tile) of the second pass on P rows of D partial
    sums. (op.py works it out once for each shape.)"""
    # (sum) A tile: p_tile rows of partial, d_tile columns.
    # p_tile is P rounded up to a power of 2, at most 1024: few
    # steps cover P. d_tile aims at 4096 values a tile, but is at
    # least 16 columns (so 16384 values at p_tile = 1024): each
    # row of a tile then loads 64 bytes in a run.
    p_tile = min(triton.next_power_of_2(P), 1024)
    d_tile = max(16, 4096 // p_tile)
    grid = (triton.cdiv(D, d_tile),)
    return grid, dict(P_TILE=p_tile, D_TILE=d_tile)


def forward_wide(x2d, weight):
    """x2d @ weight by forward_wide_kernel, as main.py's
    forward_tuned launches forward_kernel."""
    rows, D = x2d.shape
    y = torch.empty(rows, dtype=x2d.dtype, device=x2d.device)
    grid = lambda meta: (triton.cdiv(rows, meta["ROWS_TILE"]),)  # noqa: E731
    hints = alignment(x2d)  # (wide)
    forward_wide_kernel[grid](x2d, weight, y, rows, D, *x2d.stride(), **hints)
    return y


def backward_wide(x2d, weight, grad_y):
    """(grad_x, grad_w) by backward_wide_kernel, then the second
    pass by sum_partials_wide_kernel, as main.py's backward_tuned."""
    rows, D = x2d.shape
    P = lesson.programs_down(rows, D, x2d.device)
    grad_x = torch.empty((rows, D), dtype=x2d.dtype, device=x2d.device)
    sum_dtype = torch.promote_types(x2d.dtype, torch.float32)  # (any x)
    partial = torch.empty((P, D), dtype=sum_dtype, device=x2d.device)
    grid = lambda meta: (triton.cdiv(D, meta["D_TILE"]), P)  # noqa: E731
    args = (x2d, weight, grad_y, grad_x, partial, rows, D, *x2d.stride())
    backward_wide_kernel[grid](*args, **alignment(x2d))  # (wide)
    return grad_x, sum_partials(partial, weight)  # (sum)


VARIANTS = {**lesson.VARIANTS, "wide": (forward_wide, backward_wide)}


# ## Timing (the harness: skip it on a first read)
def bare(x):  # the kernel benchmark() launches bare: name, hints
    return "forward_wide_kernel", forward_wide_kernel, alignment(x)


def benchmark(rows, dim, dtype="float32"):
    """main.py's timing table, with this file's kernels."""
    return lesson.benchmark(rows, dim, dtype, sys.modules[__name__])


SWEEP = lesson.SWEEP  # `make bench` times main.py's cases


def main(argv=None):
    return lesson.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
