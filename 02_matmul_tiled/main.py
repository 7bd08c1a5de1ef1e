"""Tiled matrix multiplication: C = A @ B on the tensor cores.

Building on lesson 01, this lesson shows how one program
computes a whole tile of C with tl.dot on the tensor cores (the
GPU's matrix units), and then how to make that kernel fast. It
uses these terms from lesson 01:
- kernel[grid](args) runs grid[0] programs, each a copy of the
  kernel. tl.program_id(0) gives each program its number.
- A tensor argument arrives as a pointer to its first element.
- A block is a small tensor inside one program.
  tl.arange(0, n) is the block [0, 1, ..., n - 1], where n must
  be a power of 2. A pointer plus a block of offsets is a block
  of pointers, and tl.load reads all of them at once.
- A stride is the step, in elements, from one index to the
  next along a dimension.
- A mask turns off the loads or stores where it is False. A
  load that is turned off gives its `other` value.
- cdiv(a, b) is a / b rounded up.
- The host is the Python code that launches kernels.

For A of shape (M, K) and B of shape (K, N), we cut C into
tiles of BLOCK_M x BLOCK_N elements. One program computes each
tile, and all the programs run in parallel. Each step of a
program's loop over k takes BLOCK_K values of k. With BM, BN
and BK short for BLOCK_M, BLOCK_N and BLOCK_K, the program for
rows m:m+BM and columns n:n+BN of C does this in PyTorch:

    acc = torch.zeros(BM, BN)
    for k in range(0, K, BK):
        acc += A[m:m+BM, k:k+BK] @ B[k:k+BK, n:n+BN]
    C[m:m+BM, n:n+BN] = acc

Why tiles? In lesson 01 a program computed one element of C,
so each row of A was read once for each of C's N columns. Here
a program reads BM rows of A once and uses them for BN columns
of C. So each row of A is read N / BN times, and each column of
B is read M / BM times. For M = N = K = 4096 and 64 x 64 tiles,
that is 64 times instead of 4096. The section "Part 1 by hand",
after check(), follows one program through the kernel."""

import sys
from pathlib import Path

import torch

# With no GPU, common (the lessons' helpers) runs Triton on CPU.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (imported before triton, as it sets TRITON_INTERPRET)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## Part 1. The simplest tiled kernel: one program per C tile
# tl.dot(a, b, acc) returns acc + a @ b for 2-D blocks a and
# b, adding in float32. It multiplies on the tensor cores,
# which round float32 inputs to the 10 mantissa bits of TF32.
@triton.jit
def simple_matmul_kernel(
    a_ptr, b_ptr, c_ptr,  # pointers to A[0, 0], B[0, 0], C[0, 0]
    M, N, K,  # C is M x N, and each of its sums has K terms
    stride_am, stride_ak,  # A's strides to the next row and the next column
    stride_bk, stride_bn, stride_cm, stride_cn,  # B's and C's strides
    # tl.constexpr marks a compile-time constant. Block shapes
    # must be constants. Each new value compiles the kernel again.
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # C's tile
    BLOCK_K: tl.constexpr,  # how many values of k each loop step takes
):  # fmt: skip
    # The grid has one axis, so each program has one id, and the
    # kernel gives C's tiles to the ids row by row. (A 2-D grid
    # would do here; Part 2 needs one axis to reorder the tiles.)
    tiles_n = tl.cdiv(N, BLOCK_N)  # the number of tiles in a row of C
    pid_m = tl.program_id(0) // tiles_n  # this program's tile row
    pid_n = tl.program_id(0) % tiles_n  # this program's tile column
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        # These offsets broadcast as in torch. The masks turn off
        # the loads past the edges of A and B.
        a_offsets = rows[:, None] * stride_am + (k + ks)[None, :] * stride_ak
        b_offsets = (k + ks)[:, None] * stride_bk + cols[None, :] * stride_bn
        a_mask = (rows[:, None] < M) & ((k + ks)[None, :] < K)
        b_mask = ((k + ks)[:, None] < K) & (cols[None, :] < N)
        a = tl.load(a_ptr + a_offsets, mask=a_mask, other=0.0)  # (BLOCK_M, BLOCK_K)
        b = tl.load(b_ptr + b_offsets, mask=b_mask, other=0.0)  # (BLOCK_K, BLOCK_N)
        acc = tl.dot(a, b, acc)
    c_offsets = rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    # c_ptr.dtype.element_ty is the dtype of C's elements.
    tl.store(c_ptr + c_offsets, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def matmul_simple(a, b):
    """Computes a @ b with simple_matmul_kernel, in 64 x 64 tiles of C."""
    (M, K), N = a.shape, b.shape[1]
    assert K == b.shape[0], "a's columns must match b's rows"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    within_limits(a, b, c)  # refuses float64, and offsets too big for int32 (2**31 or more)
    # The CPU interpreter's tl.dot multiplies bfloat16 wrongly, so
    # there dot_inputs passes float32 copies. A GPU gets a, b as is.
    a, b = common.dot_inputs(a, b)
    BM = BN = 64  # C's tiles are BM x BN
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)  # one program per tile
    strides = (*a.stride(), *b.stride(), *c.stride())
    simple_matmul_kernel[grid](a, b, c, M, N, K, *strides, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=32)
    return c


reference = torch.matmul  # what every kernel here computes


# ## Is it right?
# check() compares C with reference() computed in float64.
# It allows for the rounding of float32 sums of K terms. On a
# GPU, it also allows for tl.dot's rounding to TF32.
def check(fn, a, b, what):
    """Asserts that fn(a, b) is a @ b, up to rounding."""
    got, tf32 = fn(a, b), a.dtype == torch.float32
    common.assert_close_to_float64(got, reference, (a, b), terms=a.shape[1], what=what, tf32=tf32)


# ## Part 1 by hand: the corner tile
# Take BLOCK_M = BLOCK_N = BLOCK_K = 2, which is small enough to
# follow by hand. (On a GPU, tl.dot needs blocks of 16 or more
# on each side.) A (5, 3) and B (3, 7) are row-major. So A[i, k]
# lies i * 3 + k elements after A[0, 0], and B[k, j] lies
# k * 7 + j elements after B[0, 0].
# C (5, 7) has cdiv(5, 2) = 3 rows of tiles and cdiv(7, 2) = 4
# columns of tiles, so the grid holds programs 0 to 11.
#
#     C's tiles:   0  1  2  3     Program 11 has
#                  4  5  6  7     pid_m = 11 // 4 = 2 and
#                  8  9 10 11     pid_n = 11 % 4 = 3, so its
#                                 tile is C[4:6, 6:8].
#
# So program 11 has rows = [4, 5] and cols = [6, 7]. Of its
# tile's four elements, only C[4, 6] lies inside C. Its loop
# takes k = 0, then k = 2. With ks = [0, 1], step k = 0 loads
# A and B at the offsets below. In A's block, rows run down
# and k runs across. In B's block, k runs down and columns run
# across.
#
#     A: rows[:, None] * 3 + ks[None, :]
#          = [[4], [5]] * 3 + [[0, 1]] = [[12, 13], [15, 16]]
#     B: ks[:, None] * 7 + cols[None, :]
#          = [[0], [1]] * 7 + [[6, 7]] = [[ 6,  7], [13, 14]]
#
# Step k = 2 adds 2 to A's offsets and 2 * 7 to B's.
# The table below lists each offset with the element it loads.
# "off" marks a load that the mask turns off, and the word in
# parentheses says why. Row 5 is past M = 5, column 7 is past
# N = 7, and k = 3 is past K = 3. Offset 15 appears twice: at
# k = 0 it stands for A[5, 0], at k = 2 for A[4, 3]. Where two
# masks are off, the word names the first of the mask's terms.
#
#     A, k = 0:   12 A[4,0]      13 A[4,1]
#                 15 off (row)   16 off (row)
#     A, k = 2:   14 A[4,2]      15 off (k)
#                 17 off (row)   18 off (row)
#
#     B, k = 0:    6 B[0,6]       7 off (col)
#                 13 B[1,6]      14 off (col)
#     B, k = 2:   20 B[2,6]      21 off (col)
#                 27 off (k)     28 off (k)
#
# The masks do two different jobs.
# - The row and column masks keep loads inside memory. A load
#   for row 5 or column 7 feeds only C[5, :] or C[:, 7]. The
#   store's mask never writes those, so the loaded value cannot
#   matter. Its address can matter, though. A holds 15
#   elements, so A's offsets 15 to 18 lie past its end.
# - The k mask keeps C correct. At step k = 2, the second value
#   of k is 3, which is past K = 3. For program 11, A[4, 3] and
#   B[3, 6] lie past the ends of A and B. It is worse when such
#   an offset lands inside A. Without the k mask, program 0
#   (which computes C[0:2, 0:2]) would load "A[0, 3]" at offset
#   3. Offset 3 holds A[1, 0], a real value but the wrong one.
#   Program 0 would multiply it by "B[3, 0]", which lies past
#   B's end, and add the product into C[0, 0], which the store
#   does write. With the mask, these loads give other=0.0
#   instead, so each of their products is 0.
# Finally, the store's mask lets program 11 write only C[4, 6],
# which is A[4, :] @ B[:, 6].


# ## Part 2. matmul_kernel: the simple kernel with two changes
# Each change has its own section below. Then comes the kernel,
# with each change marked by its name, (group) or (tune).


# ### (group) Grouped program order
# A GPU's cores are called SMs (streaming multiprocessors). The
# GPU runs programs in waves. A wave is as many programs as fit
# on its SMs at once, and the GPU takes programs roughly in the
# order of their ids. When two programs of a wave read the same
# tile, the second read comes from the L2 cache, not from the
# GPU's main memory. The L2 cache is an on-chip memory that
# keeps recent reads. Main memory is much slower.
#
# Two terms help to count the reads. A strip of A is BLOCK_M
# whole rows of A, which is what one row of C's tiles reads
# from A. A strip of B is BLOCK_N whole columns of B, which is
# what one column of C's tiles reads from B.
# In row-major order, a wave computes whole rows of C's tiles.
# So it reads few strips of A, but every strip of B.
# Grouped order instead cuts the rows of tiles into groups of
# GROUP_M rows. It numbers a group's tiles column by column.
# It goes down the group's first column, then down the next
# column to the right, and so on to the group's last column.
# Then it moves on to the next group.
#
# Here is a 4 x 4 grid of tiles, numbered in both orders:
#
#     row-major:   0  1  2  3      grouped,      0  2  4  6
#                  4  5  6  7      GROUP_M = 2:  1  3  5  7
#                  8  9 10 11                    8 10 12 14
#                 12 13 14 15                    9 11 13 15
#
# Take a wave of 4 programs, with ids 0 to 3. In row-major
# order they read 1 strip of A and 4 strips of B, so 5 strips
# in all. In grouped order they read 2 strips of A and 2 of B,
# so 4 strips in all.
#
# The saving grows with the grid. The file picture.png, beside
# this one, draws a 9 x 9 grid in its two left panels. (Its
# third panel belongs to Part 4.) There a wave of 9 programs
# reads 10 strips in row-major order, and 6 strips in grouped
# order with GROUP_M = 3.
#
# Now take a large case. An H200 has 132 SMs. Let C be
# 4096 x 4096, cut into a 32 x 32 grid of 128 x 128 tiles.
# Suppose that each SM runs one program at a time, because a
# program of this size fills much of an SM's shared memory.
# (Shared memory is a small, fast memory in which tiles wait
# for tl.dot.) A wave is then 132 programs:
#
#     row-major:    4 rows of 32 tiles, and 4 of the next row
#                   -> 5 strips of A + 32 of B = 37 strips
#     GROUP_M = 8:  16 columns of 8 tiles, and 4 of the next
#                   -> 8 strips of A + 17 of B = 25 strips
#
# With GROUP_M = 1, grouped order is the same as row-major
# order. The timing table that main() prints uses this for a
# comparison. Its row "tuned, row-major order" is the tuned
# kernel run with GROUP_M = 1. The section "What the changes
# bought", below, gives its times.
#
# A @triton.jit function may call another one, and Triton
# inlines the call.
@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Returns the (tile row, tile column) of program pid in
    grouped order."""
    tiles_per_group = GROUP_M * tl.cdiv(N, BLOCK_N)
    group, in_group = pid // tiles_per_group, pid % tiles_per_group
    first_tile_row = group * GROUP_M
    # The last group may have fewer than GROUP_M rows of tiles.
    # (min works on a kernel's scalars, just as in Python.)
    height = min(tl.cdiv(M, BLOCK_M) - first_tile_row, GROUP_M)
    # in_group % height walks down the group's rows of tiles.
    # in_group // height moves one column to the right each
    # time those rows run out.
    tile_row = first_tile_row + in_group % height
    tile_col = in_group // height
    # Take pid 5 in the diagram, with 4 x 4 tiles and
    # GROUP_M = 2. Then tiles_per_group is 8, group is 0,
    # in_group is 5 and height is 2. So the tile row is
    # 5 % 2 = 1, and the tile column is 5 // 2 = 2.
    return tile_row, tile_col


# ### (tune) Autotuning the tile
# The best tile depends on the sizes and the dtype. Large tiles
# load less per multiply-add, because A is read N / BLOCK_N
# times, as the module docstring says. Small tiles make more
# programs, so that every SM gets one.
# A triton.Config holds values for the kernel's constexprs.
# Here those are a tile and GROUP_M = 8. Triton's tutorial 03
# uses 8 too, and we did not tune it. A Config also holds two
# launch options:
# - The first is num_warps. A program runs on many threads at
#   once, in groups of 32 threads called warps. num_warps is
#   how many warps a program gets, and Triton shares the
#   program's tile out among them. In lesson 01 a program's
#   work was one element. Here it is a whole tile, so a program
#   takes 4 or 8 warps.
# - The second is num_stages, which is how many steps of the K
#   loop are loading at once. Triton turns the K loop into a
#   pipeline, in which the loads for the next steps fill
#   shared memory while the tensor cores multiply this step's
#   tiles.
TILES = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps
    (128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 256, 32, 4, 8),
    (256, 128, 32, 3, 8), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
    (128, 64, 32, 4, 4), (64, 256, 32, 4, 4), (64, 64, 32, 3, 4),
    (64, 64, 128, 4, 4), (16, 64, 256, 3, 4),  # 16 rows, for a small M
]  # fmt: skip
if common.INTERPRETED:  # the interpreter can't time a GPU
    TILES = [(64, 64, 32, 1, 4)]
CONFIGS = [
    triton.Config(dict(BLOCK_M=m, BLOCK_N=n, BLOCK_K=k, GROUP_M=8), num_stages=s, num_warps=w)
    for m, n, k, s, w in TILES
]


# The decorator @triton.autotune, below, times every config
# the first time the key's arguments (M, N and K) take new
# values. It then keeps the fastest config for those values.
# The autotuner also adds the inputs' dtypes to the key by
# itself.
@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])  # (tune)
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # (group)
):  # fmt: skip
    pid = tl.program_id(0)
    pid_m, pid_n = grouped_tile(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)  # (group)
    # From here on, the lines are the simple kernel's.
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
    c_offsets = rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + c_offsets, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def tile_grid(M, N):
    """Returns a function that gives the grid of a tuned launch.

    The grid depends on the tile, but the autotuner picks the
    tile only at the launch. So we pass Triton a function
    instead of a grid, and Triton calls it at the launch. The
    function's argument, meta, is a dict of the picked config's
    values (meta["BLOCK_M"], and so on). Triton's tutorial 01
    writes such a lambda inline."""
    return lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)


def matmul_tuned(a, b):
    """Computes a @ b with matmul_kernel, with the tile picked by timing."""
    (M, K), N = a.shape, b.shape[1]
    assert K == b.shape[0], "a's columns must match b's rows"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    within_limits(a, b, c)  # as in matmul_simple
    a, b = common.dot_inputs(a, b)
    strides = (*a.stride(), *b.stride(), *c.stride())
    # The launch passes no BLOCK_M, ..., GROUP_M. The autotuner
    # passes the values of the config that it picked.
    matmul_kernel[tile_grid(M, N)](a, b, c, M, N, K, *strides)
    return c


# ### What the changes bought
# The table gives GPU times on an H200 in float16, from
# `main.py --m N --n N --k N`, run twice at each size. These are
# the kernels' times alone. The timing replays a recording of a
# call's launches (a CUDA graph), without Python.
#                               4096^3            8192^3
#     simple                    0.504, 0.502 ms   4.34, 4.44 ms
#     tuned, row-major order    0.206, 0.216 ms   1.84, 1.83 ms
#     tuned (grouped)           0.212, 0.216 ms   1.71, 1.71 ms
#     torch.matmul (cuBLAS)     0.199, 0.203 ms   1.67, 1.68 ms
# Called from a plain Python loop, each time is within 0.06 ms
# of these at 4096^3, and within 0.09 ms at 8192^3. At these
# sizes, Python's cost of a launch hides behind the GPU's work.
# (tune) buys the most, a speedup of 2.3 to 2.5 times. That
# figure compares the simple kernel with the tuned kernel in row-major
# order, so it leaves (group) out.
# (group) buys 7% at 8192^3. At 4096^3 the two orders are
# within run-to-run noise, so it buys nothing we can measure.
# Here is a likely reason, which we estimated but did not
# measure. At 4096^3 a strip is 128 x 4096 x 2 bytes = 1 MiB.
# So row-major order's 37 strips (37 MiB) fit in the H200's L2
# anyway, which holds 50 MB, about 48 MiB. At 8192^3 a strip is
# 2 MiB. There a row-major wave of 2 * 64 + 4 tiles covers two
# whole rows of C's tiles and 4 tiles of a third. It reads 3
# strips of A and all 64 strips of B, which makes 67 strips
# (134 MiB). They do not fit.


# ## The Function: autograd launches the kernels
# For a loss L of C = A @ B, with grad_c the gradient of L with
# respect to C, the chain rule gives
#     grad_a = grad_c @ B^T        grad_b = A^T @ grad_c
# b.T is a view. It uses b's memory, with the strides swapped.
# The kernels take any strides, so the backward is just two
# more launches of the forward's kernel.
# A torch.autograd.Function pairs a forward with its backward.
# Here forward launches matmul_kernel through matmul_tuned, and
# it saves a and b. When autograd needs the gradients, backward
# launches the kernel on the views b.T and a.T. A model calls
# Matmul.apply(a, b).
class Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return matmul_tuned(a, b)

    # Autograd does not record what a kernel does, so this
    # backward has no second derivative. The decorator below
    # makes a request for one raise an error. op.py differs
    # here. Its backward calls op.py's own matmul, which is also
    # a Function, so autograd records the backward's work. That
    # is how op.py gives second derivatives.
    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_c):
        a, b = ctx.saved_tensors
        # ctx.needs_input_grad says which inputs autograd wants
        # a gradient for. None stands for a gradient that is not
        # wanted.
        grad_a = matmul_tuned(grad_c, b.T) if ctx.needs_input_grad[0] else None
        grad_b = matmul_tuned(a.T, grad_c) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


VARIANTS = {  # the wrappers that main() checks and times
    "simple": matmul_simple,
    "tuned": matmul_tuned,
}


# ## After this file
# Three more files follow this one. Each holds one part.
# - fused.py is Part 3. It handles offsets past 2^31 and
#   float64, and it fuses a bias and GELU into the store. op.py
#   runs its kernel.
# - persistent.py is Part 4. It makes five changes, such as one
#   program per SM, and with them it reaches cuBLAS's speed on
#   an H100 or H200.
# - stream_k.py is Part 5: programs that split a tile's K loop,
#   for products with too few tiles to fill the GPU.


# ## The harness: checks and timing (skip it on a first read)
def within_limits(a, b, c):
    """Guards the wrappers. It refuses float64 and offsets past
    2^31, which this file's kernels cannot take. fused.py's
    kernel takes both."""
    # acc is float32, so a float64 C would lose its extra bits.
    assert a.dtype != torch.float64, "acc is float32: no float64"
    # Offsets are int32, like tl.arange's values, and past 2^31
    # they wrap around. big is the largest offset that a
    # tensor's strides reach.
    big = max(common.elements_spanned(t) for t in (a, b, c))
    assert big < 2**31, "int32 offsets: see fused.py"


def check_gradients(fn, a, b, what):
    """Runs check() on the backward's two products, for a random
    grad_c, the gradient of a loss with respect to C."""
    grad_c = torch.randn(a.shape[0], b.shape[1], device=a.device)
    grad_c = grad_c.to(a.dtype)
    check(fn, grad_c, b.T, f"{what}: grad_a")
    check(fn, a.T, grad_c, f"{what}: grad_b")


DTYPES = {n: getattr(torch, n) for n in ("float16", "bfloat16", "float32")}


def variants_for(a, b):
    """Returns the VARIANTS that can compute a @ b. There are none
    for float64, because their acc is float32. (fused.py's kernel
    takes float64.)"""
    return {} if a.dtype == torch.float64 else dict(VARIANTS)


def benchmark(m, n, k, dtype="float16", module=sys.modules[__name__]):
    """Returns the timing table. It gives the GPU time, host time
    and TFLOP/s of each variant of `module` (this file, fused.py
    or persistent.py), of matmul_kernel launched bare, and of
    torch."""
    dtype = DTYPES.get(dtype, dtype)
    a, b = common.random_matrix(m, k, dtype), common.random_matrix(k, n, dtype)
    variants = module.variants_for(a, b)
    calls = {name: (lambda f=f: f(a, b)) for name, f in variants.items()}
    # A bare launch runs the kernel alone, with its arguments
    # made ahead, to time it without the wrapper's Python.
    c, grid = a.new_empty((m, n)), tile_grid(m, n)
    args = (a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride())
    calls["matmul_kernel[grid] bare"] = lambda: matmul_kernel[grid](*args)

    # best_config is the config that the autotuner picked for
    # these sizes. .fn is the kernel without its autotuner.
    def row_major():  # the tuned config, with (group) undone
        picked = matmul_kernel.best_config.all_kwargs()
        matmul_kernel.fn[grid](*args, **{**picked, "GROUP_M": 1})

    calls["tuned, row-major order"] = row_major
    calls["torch"] = lambda: reference(a, b)
    if not common.INTERPRETED:  # warm the GPU up to its steady clock
        triton.testing.do_bench(calls["torch"], warmup=1000, rep=1)
    case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')}"
    if dtype == torch.float32:  # Does torch round to TF32?
        tf32 = torch.get_float32_matmul_precision() != "highest"
        case += " tf32" if tf32 else " ieee"
    # 2 m n k counts a multiply and an add for each term.
    tflops = lambda ms: common.tflops(2 * m * n * k, ms)  # noqa: E731
    return common.timing_rows(case, calls, tflops, "TFLOP/s")


# `make bench` runs cubes, and shapes where we once found a bug
# or a slow case. The cubes set torch's float32 matmul precision
# to "high", so that torch runs float32 in TF32 too.
CUBES = [(n, d) for n in (4096, 8192) for d in ("float16", "bfloat16", "float32")]
SWEEP = [dict(m=n, n=n, k=n, dtype=d, precision="high") for n, d in CUBES]
SHAPES = [(4000,) * 3, (8192, 8192, 512), (128, 4096, 4096), (16, 8192, 8192), (1000, 1001, 999)]
SWEEP += [dict(m=m, n=n, k=k, dtype=d) for d in ("float16", "bfloat16") for m, n, k in SHAPES]


def main(argv=None, module=sys.modules[__name__]):
    """Checks and times the variants of `module`. These are this
    file's variants, or those of fused.py or persistent.py, which
    pass themselves as `module`."""
    import tools  # adds --draw and --asm (see the README)

    parser = tools.lesson_parser(module)
    size = 256 if common.INTERPRETED else 4096  # smaller, as the interpreter is slow
    # A Part's file may name the case it is for (stream_k.py).
    m, n, k, dtype = getattr(module, "CASE", (size, size, size, "float16"))
    add = parser.add_argument
    add("--m", type=int, default=m, help="rows of A and C")
    add("--n", type=int, default=n, help="columns of B and C")
    add("--k", type=int, default=k, help="columns of A, rows of B")
    add("--dtype", choices=list(DTYPES), default=dtype, help="of A, B and C")
    precision, about = torch.get_float32_matmul_precision(), "float32's matmul precision"
    add("--precision", choices=["highest", "high", "medium"], default=precision, help=about)
    args = parser.parse_args(argv)
    if min(args.m, args.n, args.k) < 1:
        parser.error("sizes must be 1 or more")
    torch.set_float32_matmul_precision(args.precision)
    print(common.describe_run())
    if hasattr(module, "print_example"):  # stream_k.py's
        module.print_example()
    a = torch.randn(100, 70, device=common.DEVICE)
    b = torch.randn(70, 50, device=common.DEVICE)
    largest = (matmul_simple(a, b) - a @ b).abs().max().item()
    # On a GPU, tl.dot rounds float32 to TF32, so this difference
    # is about 1e-2 here.
    print(f"matmul_simple(a, b) - a @ b, 100x70 @ 70x50 float32: at most {largest:.1e}")
    dtype, shape = DTYPES[args.dtype], f"{args.m}x{args.n}x{args.k}"
    a, b = common.random_matrix(args.m, args.k, dtype), common.random_matrix(args.k, args.n, dtype)
    for name, fn in (variants := module.variants_for(a, b)).items():
        # Inside the `with`, torch.empty fills new tensors with
        # NaN. So check() fails on any element that a kernel
        # never writes.
        with common.uninitialized_memory_is_nan():
            check(fn, a, b, f"{name} {shape} {args.dtype}: C")
            check_gradients(fn, a, b, f"{name} {shape} {args.dtype}")
    print(f"check {shape} {args.dtype}: {', '.join(variants)} match float64, grads too")
    refusal = getattr(module, "refusal", None)  # persistent.py's
    if refusal and (why := refusal(a, b)):  # a kernel left out
        print(f"not checked at {shape} {args.dtype}, {why}")
    if hasattr(module, "check_epilogue"):  # fused.py's and later files'
        module.check_epilogue(a, b)
        print(f"check {shape} {args.dtype}: fused + bias + GELU match float64")
    # Call the Function as a model would. Autograd runs its
    # backward, which launches matmul_kernel on b.T.
    grad_c = common.random_matrix(args.m, args.n, dtype)
    Matmul.apply(a.requires_grad_(), b).backward(grad_c)
    largest = (a.grad - grad_c @ b.T).abs().max().item()
    what = f"a.grad - grad_c @ b.T, both {args.dtype}"
    print(f"Matmul.apply(a, b).backward(grad_c): {what}: at most {largest:.1e}\n")
    table = benchmark(args.m, args.n, args.k, dtype, module)
    common.print_table(table, common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
