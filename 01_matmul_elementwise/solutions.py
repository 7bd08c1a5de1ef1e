"""Lesson 01, worked solutions to exercises.py (try each first).

`python 01_matmul_elementwise/solutions.py` checks them, as `exercises.py --solutions` does.
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
vector_k_kernel = exercises.vector_k_kernel


# ## Exercise 1: scalar_kernel's loop, then one more load.
@triton.jit
def bias_kernel(
    a_ptr, b_ptr, bias_ptr, c_ptr,
    N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
):  # fmt: skip
    pid = tl.program_id(0)
    row = pid // N
    col = pid % N
    a_ptr += row * stride_am
    b_ptr += col * stride_bn
    acc = tl.zeros((), dtype=tl.float32)
    for _ in range(K):
        acc += tl.load(a_ptr).to(tl.float32) * tl.load(b_ptr).to(tl.float32)
        a_ptr += stride_ak
        b_ptr += stride_bk
    acc += tl.load(bias_ptr + col).to(tl.float32)  # bias[col]
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + row * stride_cm + col * stride_cn, c)


# ## Exercise 2: W.T's strides are W's, swapped: (w.stride(1),
# w.stride(0)). Its rows, K, are W's columns.
def launch_2(a, w, out):
    M, K = a.shape
    N = w.shape[0]
    strides = (*a.stride(), w.stride(1), w.stride(0), *out.stride())
    launch = exercises.lesson.VECTOR_K_LAUNCH
    vector_k_kernel[(M * N,)](a, w, out, N, K, *strides, **launch)


# ## Exercise 3: a block of columns, a scalar of A, a loop over k.
@triton.jit
def row_kernel(
    a_ptr, b_ptr, c_ptr,
    N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_N: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_n = cols < N  # columns past N: no load, no store
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k in range(K):
        a = tl.load(a_ptr + row * stride_am + k * stride_ak)
        b_ptrs = b_ptr + k * stride_bk + cols * stride_bn
        b = tl.load(b_ptrs, mask=in_n, other=0.0)
        acc += a.to(tl.float32) * b.to(tl.float32)
    c_ptrs = c_ptr + row * stride_cm + cols * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=in_n)


def launch_3(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    strides = (*a.stride(), *b.stride(), *out.stride())
    block_n = triton.next_power_of_2(N)
    row_kernel[(M,)](a, b, out, N, K, *strides, BLOCK_N=block_n)


# Exercise 1's launch is written: the same, with this file's kernel.
launch_1 = practice.with_kernels(exercises.launch_1, bias_kernel=bias_kernel)
LAUNCHES = [launch_1, launch_2, launch_3]
EXERCISES = [
    dataclasses.replace(exercise, launch=launch)
    for exercise, launch in zip(exercises.EXERCISES, LAUNCHES)
]


if __name__ == "__main__":
    sys.exit(practice.main(sys.modules[__name__]))
