"""Lesson 04, practice: four kernels to write, each checked on the spot.

Read main.py's Parts 1 and 1b first (and Part 3 for exercise 4). Then write each exercise's
code where it says "Your code", and run

    python 04_weighted_sum/exercises.py        # all four
    python 04_weighted_sum/exercises.py -e 2   # one

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


# ## Exercise 1. A weighted sum over the first dimension (main.py:
# "Part 1. The simplest forward")
# For x (rows, D) and w (rows,), compute y[d] = sum over r of
# w[r] * x[r, d]: the rows weighted, then added. One program per
# tile of D_TILE columns; it walks the rows ROWS_TILE at a time,
# adds x * w into a 2-D acc, and sums acc over its rows once, at
# the end (tl.sum(acc, axis=0)). Masks for the last row tile and
# the last column tile. w now runs along the rows: w[:, None]
# broadcasts it over the columns. The launch is written.
def reference_1(x, w):
    return (w[:, None] * x).sum(0)


@triton.jit
def first_dim_kernel(
    x_ptr, w_ptr, y_ptr,  # x[0, 0], w[0], y[0]
    rows, D, stride_row, stride_col,  # x's sizes, strides
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * D_TILE + tl.arange(0, D_TILE)
    # Your code: a (ROWS_TILE, D_TILE) float32 acc, a loop over
    # row tiles, then y[cols] = tl.sum(acc, axis=0).
    pass


def launch_1(x, w, out):
    rows, D = x.shape
    grid = (triton.cdiv(D, 32),)  # a program per 32 columns
    first_dim_kernel[grid](x, w, out, rows, D, *x.stride(), ROWS_TILE=16, D_TILE=32)


# ## Exercise 2. The backward's grad_x alone (main.py: "Part 1b.
# The simplest backward")
# For y = x @ w, grad_x[r, d] = grad_y[r] * w[d]: one product an
# element, no sum. One program per tile of 16 rows, walking D in
# tiles of 32: load grad_y for its rows once, w for each column
# tile, and store their outer product into grad_x (out: a
# contiguous (rows, D)). Write the kernel's body and the launch.
def reference_2(x, w, grad_y):  # (x gives grad_x its shape only)
    return grad_y[:, None] * w[None, :] + 0 * x


@triton.jit
def grad_x_kernel(
    w_ptr, grad_y_ptr, grad_x_ptr,  # w[0], grad_y[0], grad_x[0, 0]
    rows, D,  # grad_x is a contiguous (rows, D)
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    row_ids = tl.program_id(0) * ROWS_TILE + tl.arange(0, ROWS_TILE)
    # Your code: grad_y's tile, then a loop over column tiles.
    pass


def launch_2(x, w, grad_y, out):
    # Your code: one grad_x_kernel[grid](...) launch into out.
    raise NotImplementedError("exercise 2: write the launch")


# ## Exercise 3. grad_w through a partial buffer (main.py: "Part
# 1b. The simplest backward")
# grad_w[d] = sum over r of x[r, d] * grad_y[r] sums over every
# row. Program p adds its 16 rows' share into row p of partial, a
# float32 (programs, D) buffer the checker gives the launch (NaN to
# start, so that a row no program writes shows in out); the launch
# (written) then adds partial's rows. Write the kernel's body: one
# D tile at a time, a tl.sum over the tile's rows, a store into
# partial's row p.
def reference_3(x, grad_y):
    return (x * grad_y[:, None]).sum(0)


@triton.jit
def partial_kernel(
    x_ptr, grad_y_ptr, partial_ptr,  # partial: (programs, D)
    rows, D, stride_row, stride_col,
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    p = tl.program_id(0)
    row_ids = p * ROWS_TILE + tl.arange(0, ROWS_TILE)
    # Your code: grad_y's tile, then for each column tile the sum
    # of x * grad_y over these rows, stored at partial[p, cols].
    pass


def launch_3(x, grad_y, partial, out):
    rows, D = x.shape
    programs = partial.shape[0]  # triton.cdiv(rows, 16)
    partial_kernel[(programs,)](x, grad_y, partial, rows, D, *x.stride(), ROWS_TILE=16, D_TILE=32)
    out.copy_(partial.sum(0))  # the second pass


# ## Exercise 4. grad_w with the loops swapped (main.py: "Part 3",
# (split))
# As exercise 3, but a program owns one D tile and walks down the
# rows: program (t, p) on a grid of two axes (t: tl.program_id(0),
# p: tl.program_id(1)) adds x * grad_y over row tiles p, p + P,
# p + 2P, ... (P = tl.num_programs(1)) into a 2-D acc, and stores
# its column sums at partial[p, cols]. partial is a float32 (P, D)
# buffer the checker gives the launch, with P = 3 here; the launch's
# second pass (written) adds its rows. Write the kernel's body and
# its launch: tiles of 16 rows and 16 columns.
def reference_4(x, grad_y):
    return (x * grad_y[:, None]).sum(0)


@triton.jit
def swapped_partial_kernel(
    x_ptr, grad_y_ptr, partial_ptr,  # partial: a contiguous (P, D)
    rows, D, stride_row, stride_col,
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    t, p = tl.program_id(0), tl.program_id(1)
    # Your code: this D tile's columns, the loop over every P-th row
    # tile from p, the store of acc's column sums at partial[p].
    pass


def launch_4(x, grad_y, partial, out):
    rows, D = x.shape
    programs = partial.shape[0]  # P = 3
    # Your code, in place of the next line: swapped_partial_kernel[
    # grid](...), a grid of two axes.
    raise NotImplementedError("exercise 4: write the launch")
    out.copy_(partial.sum(0))  # the second pass


EXERCISES = [
    practice.Exercise(
        title="a weighted sum over the first dimension",
        section="Part 1. The simplest forward",
        inputs=lambda: dict(x=random(37, 50), w=random(37)),
        reference=reference_1,
        terms=37,
        launch=launch_1,
    ),
    practice.Exercise(
        title="the backward's grad_x",
        section="Part 1b. The simplest backward",
        inputs=lambda: dict(x=random(37, 50), w=random(50), grad_y=random(37)),
        reference=reference_2,
        terms=1,
        launch=launch_2,
        strided=False,  # its kernel writes a contiguous grad_x
    ),
    practice.Exercise(
        title="grad_w through a partial buffer",
        section="Part 1b. The simplest backward",
        inputs=lambda: dict(x=random(37, 50), grad_y=random(37)),
        reference=reference_3,
        terms=37,
        launch=launch_3,
        scratch=dict(partial=lambda x, grad_y: (triton.cdiv(x.shape[0], 16), x.shape[1])),
        second_pass=lambda partial: partial.sum(0),  # (the launch's last line)
    ),
    practice.Exercise(
        title="grad_w with the loops swapped",
        section="Part 3, (split)",
        # 8 row tiles and 4 D tiles (50 columns): P = 3 is neither.
        inputs=lambda: dict(x=random(115, 50), grad_y=random(115)),
        reference=reference_4,
        terms=115,
        launch=launch_4,
        scratch=dict(partial=lambda x, grad_y: (3, x.shape[1])),
        second_pass=lambda partial: partial.sum(0),  # (the launch's last line)
    ),
]


if __name__ == "__main__":
    sys.exit(practice.main(sys.modules[__name__]))
