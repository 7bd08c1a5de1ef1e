"""Lesson 03, practice: four reductions to write, each checked on the spot.

Read main.py's Part 1 first (and Part 2 for exercise 4). Then write each exercise's code where
it says "Your code", and run

    python 03_blocked_sum/exercises.py        # all four
    python 03_blocked_sum/exercises.py -e 2   # one

Each exercise gets "passed" or "not yet", and for "not yet" what is
wrong: the first wrong elements, the elements no program wrote, and
any store that left its tensor (its offsets, and which program), or
load whose value reached the output. It runs on a CPU too (Triton's
interpreter). `-e N --draw FILE.png` draws which program wrote
which element; solutions.py holds worked answers (`--solutions`).
"""

import sys
from pathlib import Path

import torch

# The repository's root, for common and tools.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (before triton, which it configures)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from tools import practice  # noqa: E402


def random(*shape):  # a random float32 tensor where the kernels run
    return torch.randn(shape, device=common.DEVICE)


# ## Exercise 1. Row sums instead of column sums (main.py: "Part 1.
# The simplest kernel")
# Compute y = x.sum(1): one program per block of BLOCK_M rows; it
# walks the columns BLOCK_N at a time, adds each tile into a 2-D
# acc, and sums acc along its columns once, at the end
# (tl.sum(acc, axis=1)). Masks for the last rows and columns. The
# launch is written. x comes as a .T view: its strides matter.
def reference_1(x):
    return x.sum(1)


@triton.jit
def row_sum_kernel(
    x_ptr, out_ptr,  # x[0, 0] and out[0]
    M, N, stride_m, stride_n,  # x's sizes and strides
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    # Your code: a float32 acc, the loop over column blocks, the
    # sum over acc's columns, the store of out[rows].
    pass


def launch_1(x, out):
    M, N = x.shape
    grid = (triton.cdiv(M, 16),)  # a program per 16 rows
    row_sum_kernel[grid](x, out, M, N, *x.stride(), BLOCK_M=16, BLOCK_N=32)


# ## Exercise 2. Column maxima (main.py: "Part 1. The simplest
# kernel")
# Compute y = x.amax(0): simple_column_sum_kernel, with a maximum in
# place of each sum. A masked-off element must not win: load it as
# -inf (other=float("-inf")), and start acc at -inf too:
# tl.full((BLOCK_M, BLOCK_N), float("-inf"), tl.float32). x is all
# negative here, so a 0 in their place would win. tl.maximum(a, b)
# is the elementwise max, tl.max(acc, axis=0) the reduction. Write
# the kernel's body and the launch.
def reference_2(x):
    return x.amax(0)


@triton.jit
def column_max_kernel(
    x_ptr, out_ptr,
    M, N, stride_m, stride_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    # Your code.
    pass


def launch_2(x, out):
    # Your code: one column_max_kernel[grid](...) launch into out.
    raise NotImplementedError("exercise 2: write the launch")


# ## Exercise 3. A mean and a max in one pass (main.py: "Part 1.
# The simplest kernel")
# out is (2, N): out[0] the column means, out[1] the column maxima.
# One pass over x: each tile feeds a sum and a max at once. The
# sum wants masked-off elements as 0, the max as -inf:
# tl.where(mask, tile, float("-inf")) turns one into the other.
# x: a .T view, all negative. Write the kernel (its signature too)
# and the launch.
def reference_3(x):
    return torch.stack([x.mean(0), x.amax(0)])


# Your code: mean_max_kernel.


def launch_3(x, out):
    # Your code: one launch of your kernel into out (out.stride(0)
    # is the step from out[0] to out[1]).
    raise NotImplementedError("exercise 3: write the kernel and the launch")


# ## Exercise 4. A tall x split over more programs (main.py: "Part
# 2", change (1))
# x is tall and narrow (300 x 20): one program per column block
# would be one program. Cut the rows into chunks of
# rows_per_chunk = 40. Program (c, s), on a grid of two axes (c:
# tl.program_id(0), s: tl.program_id(1)), adds up rows s * 40 to
# s * 40 + 39 of column block c, those below M, and stores the sums
# at partial[s, cols], a float32 (n_chunks, N) buffer the checker
# gives the launch. The launch's second pass (written) then adds
# up partial's rows. Write the kernel's body and its launch.
def reference_4(x):
    return x.sum(0)


@triton.jit
def split_column_sum_kernel(
    x_ptr, partial_ptr,  # partial: a contiguous (n_chunks, N)
    M, N, stride_m, stride_n, rows_per_chunk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    chunk = tl.program_id(1)
    # Your code: the chunk's rows, BLOCK_M at a time (masked: below
    # M, and inside the chunk), a 2-D acc, and its column sums
    # stored at partial[chunk, cols].
    pass


def launch_4(x, partial, out):
    M, N = x.shape
    n_chunks = partial.shape[0]  # triton.cdiv(M, 40)
    # Your code, in place of the next line: split_column_sum_kernel[
    # grid](...), with rows_per_chunk=40, BLOCK_M=16, BLOCK_N=16:
    # a chunk is not whole tiles, so its last tile needs the mask.
    raise NotImplementedError("exercise 4: write the launch")
    out.copy_(partial.sum(0))  # the second pass


EXERCISES = [
    practice.Exercise(
        title="row sums",
        section="Part 1. The simplest kernel",
        # strides (1, 37); N = 33, one column past a tile of 32
        inputs=lambda: dict(x=random(33, 37).T),
        reference=reference_1,
        terms=50,
        launch=launch_1,
    ),
    practice.Exercise(
        title="column maxima",
        section="Part 1. The simplest kernel",
        inputs=lambda: dict(x=-0.5 - random(37, 50).abs()),  # all negative
        reference=reference_2,
        terms=1,
        launch=launch_2,
    ),
    practice.Exercise(
        title="a mean and a max in one pass",
        section="Part 1. The simplest kernel",
        inputs=lambda: dict(x=(-0.5 - random(50, 37).abs()).T),
        reference=reference_3,
        terms=37,
        launch=launch_3,
        out_step=1,  # its kernel takes out's row stride alone
    ),
    practice.Exercise(
        title="a tall x split over more programs",
        section="Part 2, change (1)",
        inputs=lambda: dict(x=random(300, 20)),
        reference=reference_4,
        terms=300,
        launch=launch_4,
        scratch=dict(partial=lambda x: (triton.cdiv(x.shape[0], 40), x.shape[1])),
        second_pass=lambda partial: partial.sum(0),  # (the launch's last line)
    ),
]


if __name__ == "__main__":
    sys.exit(practice.main(sys.modules[__name__]))
