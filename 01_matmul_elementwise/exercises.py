"""Lesson 01, practice: three kernels to write, each checked on the spot.

Read main.py first. Then write each exercise's code where it says
"Your code", and run

    python 01_matmul_elementwise/exercises.py        # all three
    python 01_matmul_elementwise/exercises.py -e 2   # one

Each exercise gets "passed" or "not yet", and for "not yet" what is
wrong: the first wrong elements, the elements no program wrote, and
any load or store that left its tensor, with the offsets (and the
program, for a store). A load outside is seen when its value
reaches the output, not when a mask drops it. It runs on a CPU too (Triton's
interpreter), at small sizes. `-e N --draw FILE.png` draws which
program wrote which element. solutions.py holds worked answers
(`--solutions` checks them): try first, then compare.
"""

import sys
from pathlib import Path

import torch

# The repository's root, for common, tools and lesson_loader.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (before triton, which it configures)
import lesson_loader  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from tools import practice  # noqa: E402

lesson = lesson_loader.load_lesson(Path(__file__).resolve().parent)
vector_k_kernel = lesson.vector_k_kernel  # main.py's, for exercise 2


def random(*shape):  # a random float32 tensor where the kernels run
    return torch.randn(shape, device=common.DEVICE)


# ## Exercise 1. A bias in the same kernel (main.py: "The simplest
# kernel")
# Compute C = A @ B + bias, where bias has one value per column of C
# (shape (N,), contiguous: bias[col] is at bias_ptr + col). Each
# program adds bias[col] to its sum before its store: one more
# tl.load, no second kernel. The launch is written.
def reference_1(a, b, bias):
    return a @ b + bias


@triton.jit
def bias_kernel(
    a_ptr, b_ptr, bias_ptr, c_ptr,  # bias_ptr: bias[0]
    N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
):  # fmt: skip
    pid = tl.program_id(0)
    row = pid // N
    col = pid % N
    # Your code: scalar_kernel's loop over k (main.py), then add
    # bias[col] to the sum and store it at C[row, col].
    pass


def launch_1(a, b, bias, out):
    M, K = a.shape
    N = b.shape[1]
    strides = (*a.stride(), *b.stride(), *out.stride())
    bias_kernel[(M * N,)](a, b, bias, out, N, K, *strides, num_warps=1)


# ## Exercise 2. nn.Linear's product, no copy (main.py: "Transposed
# views, and gradients")
# nn.Linear stores its weight W as (N, K) and computes A @ W.T. Launch
# main.py's vector_k_kernel (here as vector_k_kernel) so that it
# reads W.T where W lies: only the strides you pass change. Write the
# launch; lesson.vector_k is a model, lesson.VECTOR_K_LAUNCH its
# launch options.
def reference_2(a, w):
    return a @ w.T


def launch_2(a, w, out):
    # Your code: one vector_k_kernel[grid](...) launch into out.
    raise NotImplementedError("exercise 2: write the launch")


# ## Exercise 3. One program per row of C (main.py: "Faster: BLOCK_K
# values of k per step")
# Program r computes the whole row C[r, :], as a block of BLOCK_N
# columns: for each k it loads one value A[r, k] and a block of B's
# row k, and adds their product to a block acc. A mask stops the
# loads and the store past N (BLOCK_N is N rounded up to a power of
# 2: triton.next_power_of_2). Write the kernel's body and the launch;
# a constexpr goes in by keyword: row_kernel[grid](..., BLOCK_N=...).
def reference_3(a, b):
    return a @ b


@triton.jit
def row_kernel(
    a_ptr, b_ptr, c_ptr,
    N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_N: tl.constexpr,  # columns in a block, >= N
):  # fmt: skip
    row = tl.program_id(0)
    # Your code: cols, a mask, a float32 acc of BLOCK_N zeros, the
    # loop over k, the store of C[row, cols].
    pass


def launch_3(a, b, out):
    # Your code: one row_kernel[grid](...) launch, a program a row.
    raise NotImplementedError("exercise 3: write the launch")


EXERCISES = [
    practice.Exercise(
        title="a bias in the same kernel",
        section="The simplest kernel: one program, one output",
        inputs=lambda: dict(a=random(5, 7), b=random(7, 3), bias=random(3)),
        reference=reference_1,
        terms=7,
        launch=launch_1,
    ),
    practice.Exercise(
        title="A @ W.T without a copy",
        section="Transposed views, and gradients",
        inputs=lambda: dict(a=random(6, 9), w=random(4, 9)),
        reference=reference_2,
        terms=9,
        launch=launch_2,
    ),
    practice.Exercise(
        title="one program per row of C",
        section="Faster: BLOCK_K values of k per step",
        inputs=lambda: dict(a=random(5, 7), b=random(7, 20)),
        reference=reference_3,
        terms=7,
        launch=launch_3,
    ),
]


if __name__ == "__main__":
    sys.exit(practice.main(sys.modules[__name__]))
