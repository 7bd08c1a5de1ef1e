"""Lesson 03, worked solutions to exercises.py (try each first).

`python 03_blocked_sum/solutions.py` checks them, as `exercises.py --solutions` does.
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


# ## Exercise 1: simple_column_sum_kernel with rows and columns swapped.
@triton.jit
def row_sum_kernel(
    x_ptr, out_ptr,
    M, N, stride_m, stride_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for j0 in range(0, N, BLOCK_N):
        cols = j0 + tl.arange(0, BLOCK_N)
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        mask = row_mask[:, None] & (cols < N)[None, :]
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    sums = tl.sum(acc, axis=1)  # acc's columns, added once
    tl.store(out_ptr + rows, sums.to(out_ptr.dtype.element_ty), mask=row_mask)


# ## Exercise 2: -inf where a sum had 0.
@triton.jit
def column_max_kernel(
    x_ptr, out_ptr,
    M, N, stride_m, stride_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc = tl.full((BLOCK_M, BLOCK_N), float("-inf"), dtype=tl.float32)
    for i0 in range(0, M, BLOCK_M):
        rows = i0 + tl.arange(0, BLOCK_M)
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        mask = (rows < M)[:, None] & col_mask[None, :]
        tile = tl.load(x_ptr + offsets, mask=mask, other=float("-inf"))
        acc = tl.maximum(acc, tile.to(tl.float32))
    top = tl.max(acc, axis=0)
    tl.store(out_ptr + cols, top.to(out_ptr.dtype.element_ty), mask=col_mask)


def launch_2(x, out):
    M, N = x.shape
    grid = (triton.cdiv(N, 32),)
    column_max_kernel[grid](x, out, M, N, *x.stride(), BLOCK_M=16, BLOCK_N=32)


# ## Exercise 3: two accumulators, one load of each tile; a masked
# element is 0 for the sum, -inf for the max.
@triton.jit
def mean_max_kernel(
    x_ptr, out_ptr,
    M, N, stride_m, stride_n,
    stride_out,  # out[0] to out[1]
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    top = tl.full((BLOCK_M, BLOCK_N), float("-inf"), dtype=tl.float32)
    for i0 in range(0, M, BLOCK_M):
        rows = i0 + tl.arange(0, BLOCK_M)
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        mask = (rows < M)[:, None] & col_mask[None, :]
        tile = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        total += tile
        top = tl.maximum(top, tl.where(mask, tile, float("-inf")))
    mean = tl.sum(total, axis=0) / M
    tl.store(out_ptr + cols, mean, mask=col_mask)
    tl.store(out_ptr + stride_out + cols, tl.max(top, axis=0), mask=col_mask)


def launch_3(x, out):
    M, N = x.shape
    grid = (triton.cdiv(N, 32),)
    mean_max_kernel[grid](x, out, M, N, *x.stride(), out.stride(0), BLOCK_M=16, BLOCK_N=32)


# ## Exercise 4: the simple kernel's loop, over one chunk of rows;
# the mask keeps rows below M and inside the chunk.
@triton.jit
def split_column_sum_kernel(
    x_ptr, partial_ptr,
    M, N, stride_m, stride_n, rows_per_chunk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    chunk = tl.program_id(1)
    col_mask = cols < N
    first = chunk * rows_per_chunk
    end = tl.minimum(first + rows_per_chunk, M)  # the chunk's end, or M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in range(first, first + rows_per_chunk, BLOCK_M):
        rows = i0 + tl.arange(0, BLOCK_M)
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        mask = (rows < end)[:, None] & col_mask[None, :]
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(partial_ptr + chunk * N + cols, tl.sum(acc, axis=0), mask=col_mask)


def launch_4(x, partial, out):
    M, N = x.shape
    n_chunks = partial.shape[0]
    grid = (triton.cdiv(N, 16), n_chunks)
    split_column_sum_kernel[grid](x, partial, M, N, *x.stride(), 40, BLOCK_M=16, BLOCK_N=16)
    out.copy_(partial.sum(0))  # the second pass


# Exercise 1's launch is written: the same, with this file's kernel.
launch_1 = practice.with_kernels(exercises.launch_1, row_sum_kernel=row_sum_kernel)
LAUNCHES = [launch_1, launch_2, launch_3, launch_4]
EXERCISES = [
    dataclasses.replace(exercise, launch=launch)
    for exercise, launch in zip(exercises.EXERCISES, LAUNCHES)
]


if __name__ == "__main__":
    sys.exit(practice.main(sys.modules[__name__]))
