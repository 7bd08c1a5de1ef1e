"""Lesson 04, worked solutions to exercises.py (try each first).

`python 04_weighted_sum/solutions.py` checks them, as `exercises.py --solutions` does.
"""

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402, F401  (before triton, which it configures)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from tools import practice  # noqa: E402

exercises = practice.sibling(__file__, "exercises")  # the tasks, inputs, references


# ## Exercise 1: simple_forward_kernel with rows and columns swapped.
@triton.jit
def first_dim_kernel(
    x_ptr, w_ptr, y_ptr,
    rows, D, stride_row, stride_col,
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * D_TILE + tl.arange(0, D_TILE)
    col_mask = cols < D
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=tl.float32)
    for r0 in range(0, rows, ROWS_TILE):
        row_ids = r0 + tl.arange(0, ROWS_TILE)
        row_mask = row_ids < rows
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        mask = row_mask[:, None] & col_mask[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        w = tl.load(w_ptr + row_ids, mask=row_mask, other=0.0)
        acc += x.to(tl.float32) * w.to(tl.float32)[:, None]
    y = tl.sum(acc, axis=0)  # once, at the end
    tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=col_mask)


# ## Exercise 2: the outer product of two masked loads.
@triton.jit
def grad_x_kernel(
    w_ptr, grad_y_ptr, grad_x_ptr,
    rows, D,
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    row_ids = tl.program_id(0) * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0)
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        grad_x = grad_y[:, None] * w[None, :]
        offsets = row_ids[:, None] * D + cols[None, :]
        mask = row_mask[:, None] & col_mask[None, :]
        tl.store(grad_x_ptr + offsets, grad_x, mask=mask)


def launch_2(x, w, grad_y, out):
    rows, D = x.shape
    grid = (triton.cdiv(rows, 16),)
    grad_x_kernel[grid](w, grad_y, out, rows, D, ROWS_TILE=16, D_TILE=32)


# ## Exercise 3: simple_backward_kernel's grad_w half.
@triton.jit
def partial_kernel(
    x_ptr, grad_y_ptr, partial_ptr,
    rows, D, stride_row, stride_col,
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    p = tl.program_id(0)
    row_ids = p * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0)
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        mask = row_mask[:, None] & col_mask[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        share = tl.sum(x * grad_y[:, None], axis=0)
        tl.store(partial_ptr + p * D + cols, share, mask=col_mask)


# Exercise 3's launch is written: the same, with this file's kernel.
launch_3 = practice.with_kernels(exercises.launch_3, partial_kernel=partial_kernel)
launch_1 = practice.with_kernels(exercises.launch_1, first_dim_kernel=first_dim_kernel)


# ## Exercise 4: backward_kernel's loop, without grad_x:
# every P-th row tile from p, one D tile.
@triton.jit
def swapped_partial_kernel(
    x_ptr, grad_y_ptr, partial_ptr,
    rows, D, stride_row, stride_col,
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    t, p = tl.program_id(0), tl.program_id(1)
    P = tl.num_programs(1)
    cols = t * D_TILE + tl.arange(0, D_TILE)
    col_mask = cols < D
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=tl.float32)
    for tile in range(p, tl.cdiv(rows, ROWS_TILE), P):
        row_ids = tile * ROWS_TILE + tl.arange(0, ROWS_TILE)
        row_mask = row_ids < rows
        grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0)
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        mask = row_mask[:, None] & col_mask[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        acc += x * grad_y[:, None]
    tl.store(partial_ptr + p * D + cols, tl.sum(acc, axis=0), mask=col_mask)


def launch_4(x, grad_y, partial, out):
    rows, D = x.shape
    grid = (triton.cdiv(D, 16), partial.shape[0])  # (D tiles, P)
    swapped_partial_kernel[grid](x, grad_y, partial, rows, D, *x.stride(), ROWS_TILE=16, D_TILE=16)
    out.copy_(partial.sum(0))  # the second pass


LAUNCHES = [launch_1, launch_2, launch_3, launch_4]
EXERCISES = [
    dataclasses.replace(exercise, launch=launch)
    for exercise, launch in zip(exercises.EXERCISES, LAUNCHES)
]


if __name__ == "__main__":
    sys.exit(practice.main(sys.modules[__name__]))
