"""Lesson 02, worked solutions to exercises.py (try each first).

`python 02_matmul_tiled/solutions.py` checks them, as `exercises.py --solutions` does.
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
run_start, wait_for_flag = exercises.run_start, exercises.wait_for_flag  # for exercise 4


@triton.jit
def tile_product(
    a_ptr, b_ptr, pid_m, pid_n, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """Part 1's K loop for tile (pid_m, pid_n): its rows, cols and acc."""
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a_offsets = rows[:, None] * stride_am + (k + ks)[None, :] * stride_ak
        b_offsets = (k + ks)[:, None] * stride_bk + cols[None, :] * stride_bn
        a_mask = (rows[:, None] < M) & ((k + ks)[None, :] < K)
        b_mask = ((k + ks)[:, None] < K) & (cols[None, :] < N)
        a = tl.load(a_ptr + a_offsets, mask=a_mask, other=0.0)
        b = tl.load(b_ptr + b_offsets, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc)
    return rows, cols, acc


# ## Exercise 1: Part 1's kernel, and tl.maximum before the store.
@triton.jit
def relu_matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = tl.program_id(0) // tiles_n
    pid_n = tl.program_id(0) % tiles_n
    rows, cols, acc = tile_product(
        a_ptr, b_ptr, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
        BLOCK_M, BLOCK_N, BLOCK_K,
    )  # fmt: skip
    acc = tl.maximum(acc, 0.0)  # the ReLU, in registers
    c_offsets = rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + c_offsets, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


# ## Exercise 2: each pointer moved to its batch's matrix first.
@triton.jit
def batched_matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_ab, stride_am, stride_ak,
    stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    batch = tl.program_id(1)
    a_ptr += batch * stride_ab
    b_ptr += batch * stride_bb
    c_ptr += batch * stride_cb
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = tl.program_id(0) // tiles_n
    pid_n = tl.program_id(0) % tiles_n
    rows, cols, acc = tile_product(
        a_ptr, b_ptr, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
        BLOCK_M, BLOCK_N, BLOCK_K,
    )  # fmt: skip
    c_offsets = rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + c_offsets, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def launch_2(a, b, out):
    batch, M, K = a.shape
    N = b.shape[2]
    tiles = triton.cdiv(M, 32) * triton.cdiv(N, 32)
    strides = (*a.stride(), *b.stride(), *out.stride())
    batched_matmul_kernel[(tiles, batch)](
        a, b, out, M, N, K, *strides, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16
    )


# ## Exercise 3: grouped_tile, written out.
@triton.jit
def tile_of(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    tiles_per_group = GROUP_M * tl.cdiv(N, BLOCK_N)
    group, in_group = pid // tiles_per_group, pid % tiles_per_group
    first_row = group * GROUP_M
    group_rows = min(tl.cdiv(M, BLOCK_M) - first_row, GROUP_M)
    return first_row + in_group % group_rows, in_group // group_rows


# ## Exercise 4: simple_stream_k_kernel's wait, as a function.
@triton.jit
def add_partials(
    acc, pid, first, tile_start, iterations, partial_ptr, flag_ptr, in_slot,
    PROGRAMS: tl.constexpr, SLOT: tl.constexpr,
):  # fmt: skip
    other = pid - 1
    waiting = first > tile_start  # the run starts inside the tile
    while waiting:
        wait_for_flag(flag_ptr + other)
        acc += tl.load(partial_ptr + other * SLOT + in_slot, cache_modifier=".cg")
        # Does the tile start before that program's run?
        waiting = run_start(other, iterations, PROGRAMS) > tile_start
        other -= 1
    return acc


# Exercises 1, 3 and 4 wrote their launches: the same, with this
# file's kernels (3's and 4's kernels are the exercises', calling
# this tile_of and this add_partials).
launch_1 = practice.with_kernels(exercises.launch_1, relu_matmul_kernel=relu_matmul_kernel)
kernel_body = practice.with_kernels(exercises.grouped_matmul_kernel.fn, tile_of=tile_of)
grouped_matmul_kernel = triton.jit(kernel_body)
launch_3 = practice.with_kernels(exercises.launch_3, grouped_matmul_kernel=grouped_matmul_kernel)
owner_body = practice.with_kernels(exercises.owner_stream_k_kernel.fn, add_partials=add_partials)
owner_stream_k_kernel = triton.jit(owner_body)
launch_4 = practice.with_kernels(exercises.launch_4, owner_stream_k_kernel=owner_stream_k_kernel)
LAUNCHES = [launch_1, launch_2, launch_3, launch_4]
EXERCISES = [
    dataclasses.replace(exercise, launch=launch)
    for exercise, launch in zip(exercises.EXERCISES, LAUNCHES)
]


if __name__ == "__main__":
    sys.exit(practice.main(sys.modules[__name__]))
