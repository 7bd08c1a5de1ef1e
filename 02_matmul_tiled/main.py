"""Tiled matrix multiplication C = A @ B with tl.dot, from one tile per program to a persistent one.

You learn to compute a tile of C on the tensor cores (the GPU's matrix units) with tl.dot, to tune
and order the programs, to fuse a bias and GELU into the store, to reach cuBLAS's speed with tensor
descriptors in a persistent kernel, and to join autograd. For A (M, K) and B (K, N):

    C[i, j] = sum over k of A[i, k] * B[k, j]        dA = dC @ B^T,  dB = A^T @ dC

A program is one instance of the kernel; a launch runs many. You write it for whole blocks of
values, and Triton spreads each operation over the program's threads. The grid says how many
programs launch, tl.program_id(0) which one this is. Here C is cut into BLOCK_M x BLOCK_N tiles
(BM x BN below), one per program. A loaded A tile serves BN columns of C, so A is read N / BN
times, not N times. The program for rows m:m+BM, columns n:n+BN of C runs:

    acc = zeros(BM, BN)
    for k in range(0, K, BK):  acc += A[m:m+BM, k:k+BK] @ B[k:k+BK, n:n+BN]  # BK: BLOCK_K
    C[m:m+BM, n:n+BN] = acc

A worked example with tiles of 2 (on a GPU tl.dot needs 16 or more): A (3, 4) and B (4, 5),
row-major, so their strides (elements to the next row, column) are (4, 1) and (5, 1). C has
cdiv(3, 2) = 2 rows of tiles and cdiv(5, 2) = 3 columns (cdiv rounds the division up); program
pid computes tile (pid // 3, pid % 3): program 4, tile (1, 1), has rows = 1 * 2 + [0, 1] = [2, 3]
and cols = [2, 3]. Its K loop takes k = 0, then 2; ks = [0, 1] indexes one step's k (A's columns).
In the table of the offsets it reads, x[:, None] makes a column of x and y[None, :] a row, and +
broadcasts the two into a grid, as in torch. "-" marks an element switched off by a mask:

    k   k + ks   A: rows[:, None] * 4 + (k + ks)[None, :]   B: (k + ks)[:, None] * 5 + cols[None, :]
    0   [0, 1]   [[ 8,  9], [ -,  -]]                       [[ 2,  3], [ 7,  8]]
    2   [2, 3]   [[10, 11], [ -,  -]]                       [[12, 13], [17, 18]]

Row 3 is past M = 3 (its offsets, 12 and up, pass A's last element, 11): the mask rows < M
switches its loads off (they read 0, which adds nothing) and its store. So the program stores
C[2, 2] and C[2, 3], at offsets 2 * 5 + [2, 3] = [12, 13].
"""

import functools
import sys
from pathlib import Path

import torch
from torch import Tensor

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # so that `import common` finds the repository's common/
import common  # noqa: E402  (before any kernel: without CUDA it switches on Triton's interpreter)
import tools  # noqa: E402  (main's --draw and --asm)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32", "float64")}
ACTIVATIONS = (None, "gelu_tanh")  # what the fused epilogue (the code after the K loop) applies


# ## The simplest tiled kernel: one program per C tile, tiles in row-major order
# A tensor argument arrives as a pointer to its first element; c_ptr.dtype.element_ty is its dtype.
# A tl.constexpr argument is a constant that Triton compiles into the kernel (a new value compiles
# a new version): block shapes must be.
@triton.jit
def simple_matmul_kernel(
    a_ptr, b_ptr, c_ptr,  # pointers to A[0, 0], B[0, 0] and C[0, 0]; any strides
    M, N, K,  # C is (M, N); K is the length of each dot product
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,  # to the next row, column
    INPUT_PRECISION: tl.constexpr,  # float32 dots: "tf32" (fast, 10-bit mantissas) or "ieee"
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # the C tile, the K step
):  # fmt: skip
    # Add in float32 (float64 for float64): a 16-bit running sum would round small products away.
    acc_dtype = tl.float64 if c_ptr.dtype.element_ty == tl.float64 else tl.float32
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tl.program_id(0) // tiles_n, tl.program_id(0) % tiles_n  # row-major order
    # A block: a small tensor, here of row indices; tl.arange's length must be a power of two. In
    # int64, since row * stride_am passes 2^31 in a large A, where int32 would wrap around.
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K).to(tl.int64)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=acc_dtype)
    for k in range(0, K, BLOCK_K):
        # (BLOCK_M, BLOCK_K) pointers to A and (BLOCK_K, BLOCK_N) to B: the worked example's.
        a_ptrs = a_ptr + rows[:, None] * stride_am + (k + ks)[None, :] * stride_ak
        b_ptrs = b_ptr + (k + ks)[:, None] * stride_bk + cols[None, :] * stride_bn
        # Masks: rows past M, columns past N and k + ks past K load 0 instead.
        a = tl.load(a_ptrs, mask=(rows[:, None] < M) & (k + ks < K)[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=(k + ks < K)[:, None] & (cols[None, :] < N), other=0.0)
        # tl.dot(a, b, acc) returns acc + a @ b: tensor cores, or multiply-adds for float32 "ieee".
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, out_dtype=acc_dtype)
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def matmul_simple(a, b, c):
    """c = a @ b through simple_matmul_kernel: 64 x 64 tiles of C, 32 values of k a step."""
    (m, k), n = a.shape, b.shape[1]
    grid = (triton.cdiv(m, 64) * triton.cdiv(n, 64),)  # kernel[grid]: one program per C tile
    simple_matmul_kernel[grid](
        a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(),
        INPUT_PRECISION=input_precision(a.dtype), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32,
    )  # fmt: skip


def input_precision(dtype):  # as torch.matmul: float32 in TF32 (10-bit mantissas) unless "highest"
    tf32 = dtype == torch.float32 and torch.get_float32_matmul_precision() != "highest"
    return "tf32" if tf32 else "ieee"


def reference(a, b):  # what matmul computes, in PyTorch
    return torch.matmul(a, b)


def check(fn, a, b, what):
    """fn(a, b, out) into an out of NaN (so a tile no program wrote shows) against float64, within
    the rounding its dtype allows, which grows with K and |A| @ |B|; AssertionError if not."""
    expected = reference(a.double(), b.double())
    magnitude = reference(a.double().abs(), b.double().abs())
    roundoff = 2.0**-9 if input_precision(a.dtype) == "tf32" else 0.0  # TF32: 10-bit mantissas
    out = torch.full(expected.shape, float("nan"), dtype=a.dtype, device=a.device)
    fn(a, b, out)
    common.assert_close(out, expected, magnitude, a.shape[1], what, roundoff)


def random_matrix(rows, cols, dtype=torch.float32, transposed=False):  # transposed: a .T view
    t = torch.randn((cols, rows) if transposed else (rows, cols), device=common.DEVICE).to(dtype)
    return t.T if transposed else t


# ## Grouped program order
# The GPU starts programs roughly in the order of their ids, a wave at a time (as many as fit on its
# SMs, streaming multiprocessors: 132 on an H100 SXM). A tile a wave reads twice comes from the L2
# cache (on-chip memory that keeps recent reads) the second time. In row-major order a wave computes
# whole rows of C tiles: few strips of A (BLOCK_M rows each) but all of B's (BLOCK_N columns each).
# Grouped order walks GROUP_M tile rows down, then right: a squarer patch. Below, a wave of 4 reads
# 1 strip of A and 4 of B row-major, 2 and 2 grouped. `main.py --draw` shows a 9 x 9 grid with
# GROUP_M = 3, where a wave of 9 reads 10 strips against 6.
#
#     row-major:   0  1  2  3         grouped, GROUP_M = 2:   0  2  4  6
#                  4  5  6  7                                 1  3  5  7
#                  8  9 10 11                                 8 10 12 14
#                 12 13 14 15                                 9 11 13 15
@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(tile row, tile column) of pid: a group's ids run down (% gives the row), then right."""
    tiles_per_group = GROUP_M * tl.cdiv(N, BLOCK_N)
    group, in_group = pid // tiles_per_group, pid % tiles_per_group
    first_row = group * GROUP_M
    rows_in_group = min(tl.cdiv(M, BLOCK_M) - first_row, GROUP_M)  # the last group may be short
    return first_row + in_group % rows_in_group, in_group // rows_in_group  # pid 5: row 1, col 2


# ## A fused epilogue: bias and GELU before the store
# The epilogue is the code after the K loop, which writes C. PyTorch's matmul applies no activation,
# so PyTorch computes gelu(x @ w + bias) as a matmul that writes P = x @ w + bias, then a kernel
# that reads P back and writes GELU(P). Here the kernel adds the bias and applies GELU to the
# float32 tile in registers, and writes C once. GELU(P) = P * Φ(P), Φ the normal distribution
# function, in GPT-2's tanh form: (1 + tanh(y)) / 2 = sigmoid(2y), y = √(2/π) (P + 0.044715 P^3), a
# few instructions where erf takes dozens. The backward (Autograd, below) needs P, the
# pre-activation: storing it, one more M x N write, costs less than computing A @ B + bias again.
@triton.jit
def add_bias(acc, bias_ptr, cols, N):  # acc + bias[cols] on every row; no bias: acc
    if bias_ptr is not None:  # None is known when Triton compiles: the `if` costs nothing
        acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(acc.dtype)[None, :]
    return acc


@triton.jit
def activate(acc, ACTIVATION: tl.constexpr):  # one of ACTIVATIONS
    if ACTIVATION == "gelu_tanh":  # 1.5958: 2 * sqrt(2 / pi)
        acc = acc * tl.sigmoid(1.5957691216057308 * (acc + 0.044715 * acc * acc * acc))
    return acc


# ## Autotuning the tile
# matmul_simple fixed the tile at 64 x 64 x 32, but the best tile depends on the sizes and dtype:
# a large C wants 128 x 256 tiles (fewer loads per multiply-add), a small C smaller ones, so that
# every SM gets a program. A triton.Config holds a tile, num_stages (K steps in flight: loads for
# the next ones fill shared memory, the SM's small fast memory, while the tensor cores multiply)
# and num_warps (the program's threads, in warps of 32).
TILES = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps
    (128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 256, 32, 4, 8), (256, 128, 32, 3, 8),
    (128, 128, 64, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 256, 32, 4, 4),
    (64, 64, 32, 3, 4), (64, 64, 128, 4, 4), (16, 64, 256, 3, 4),  # 16 rows: for a small M
]  # fmt: skip
CONFIGS = [  # the interpreter cannot time configs: it gets one
    triton.Config(dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8), num_stages=s, num_warps=w)
    for bm, bn, bk, s, w in ([(64, 64, 32, 1, 4)] if common.INTERPRETED else TILES)
]


# ## The tuned kernel: simple_matmul_kernel, changed in four places marked (1) to (4)
# (1) On a call with new `key` values, @triton.autotune times each config (with do_bench: 5 ms of
# warm-up, 20 of timing) and keeps the fastest. (2) Grouped order. (3) The epilogue. (4) Pointers
# made once and moved on by BLOCK_K each step (the mask becomes ks < K - k): new 2-D offsets each
# step ran 1.7 times slower at 1000 x 1001 x 999 (results/NOTES.md item 65).
@triton.autotune(  # (1)
    configs=CONFIGS,
    # What picks the tile: the sizes, the precision, and the layout (stride_ak and stride_bn are 1
    # for row-major A and B, larger for a .T view or a strided slice). Triton adds the dtypes.
    key=["M", "N", "K", "stride_ak", "stride_bn", "INPUT_PRECISION"],
    do_bench=functools.partial(triton.testing.do_bench, warmup=5, rep=20),
    cache_results=True,  # keep each choice on disk, for the next run
)
@triton.jit
def matmul_pointer_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, pre_ptr,  # bias (N,), P (C's strides): None where not used
    M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    INPUT_PRECISION: tl.constexpr, ACTIVATION: tl.constexpr,  # ACTIVATION: one of ACTIVATIONS
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    acc_dtype = tl.float64 if c_ptr.dtype.element_ty == tl.float64 else tl.float32
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)  # (2)
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K).to(tl.int64)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak  # (4): for k = 0
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=acc_dtype)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(ks[:, None] < K - k) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, out_dtype=acc_dtype)
        a_ptrs += tl.cast(BLOCK_K, tl.int64) * stride_ak  # (4); int64: M * BLOCK_K for a tall A.T
        b_ptrs += tl.cast(BLOCK_K, tl.int64) * stride_bk
    c_offsets = rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    acc = add_bias(acc, bias_ptr, cols, N)  # (3)
    if pre_ptr is not None:  # P, kept for the backward
        tl.store(pre_ptr + c_offsets, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
    tl.store(c_ptr + c_offsets, activate(acc, ACTIVATION).to(c_ptr.dtype.element_ty), mask=c_mask)


def tile_grid(m, n):  # a grid may be a function of the config the autotuner picked (a dict)
    return lambda config: (triton.cdiv(m, config["BLOCK_M"]) * triton.cdiv(n, config["BLOCK_N"]),)


def launch_pointer(a, b, c, bias=None, pre=None, activation=None):
    (m, k), n = a.shape, b.shape[1]
    matmul_pointer_kernel[tile_grid(m, n)](
        a, b, c, bias, pre, m, n, k, *a.stride(), *b.stride(), *c.stride(),
        INPUT_PRECISION=input_precision(a.dtype), ACTIVATION=activation,
    )  # fmt: skip


# ## Part 2, after a first read (Part 1, above, is a complete matmul): cuBLAS's speed
# The pointer kernel computes a tile of addresses and masks every K step. A tensor descriptor,
# tl.make_tensor_descriptor(base, shape, strides, block shape), describes the matrix once, and
# desc.load([row, col]) reads the tile that starts there, 0 past the edge (desc.store drops what
# lies past it): no masks. On an H100 a load is one TMA copy (the Tensor Memory Accelerator fills
# shared memory while the threads compute). The rules: base 16-byte aligned, last stride 1, other
# strides multiples of 16 bytes. When one was broken, an H200 returned wrong numbers with no error:
# persistent_problem (below) checks them. With one program per C tile, an SM idles between programs:
# while a tile is stored, and until the next program's first loads arrive. A persistent kernel
# launches PROGRAMS = one program per SM; program p walks tiles p, p + PROGRAMS, ... in grouped
# order. tl.range is range with hints for the compiler: flatten=True merges the tile loop and the K
# loop, so the next tile's loads are in flight while this tile ends and is stored.
@triton.jit
def store_c_tile(desc, tile, row, col, HALVES: tl.constexpr):
    """Stores tile at [row, col], whole or in halves (HALVES): a 128 x 256 float32 tile outgrows the
    shared memory left for the store; 128 x 128 tiles fit, but ran 10% slower in TF32 (NOTES 73)."""
    if HALVES:  # no tile[:, :half] in Triton: reshape to (rows, 2, half), move the 2 last, split
        half: tl.constexpr = tile.shape[1] // 2
        left, right = tl.split(tl.permute(tl.reshape(tile, (tile.shape[0], 2, half)), (0, 2, 1)))
        desc.store([row, col], left.to(desc.dtype))
        desc.store([row, col + half], right.to(desc.dtype))
    else:
        desc.store([row, col], tile.to(desc.dtype))


@functools.cache  # once per shape: asked on every launch (host time, NOTES item 57)
def wide_tiles(m, n, programs):
    """Whether C's tiles are 128 x 256 (more work per load) or 128 x 128: wide, unless narrow ones
    keep the programs 10% busier. A turn: every program takes one tile. 3072^2 on 132 SMs: 288 wide
    tiles take 3 turns, 288 / 396 = 73% busy; 576 narrow ones take 5, 87%: narrow."""
    tiles = {block_n: triton.cdiv(m, 128) * triton.cdiv(n, block_n) for block_n in (128, 256)}
    fill = {bn: t / (triton.cdiv(t, programs) * programs) for bn, t in tiles.items()}  # busy share
    return 1.1 * fill[256] >= fill[128]


# wide_tiles' rule picks the tile (timing configs picked worse tiles after other GPU work: NOTES
# item 56). @triton.heuristics({name: f}) sets name = f(args) at each launch, args the arguments
# by name (later entries see earlier ones' values; num_stages, num_warps may be set too). A new fact
# about an int ("divisible by 16") compiles a new version: do_not_specialize lists ints that don't.
@triton.heuristics({
    "BLOCK_N": lambda args: 256 if wide_tiles(args["M"], args["N"], args["PROGRAMS"]) else 128,
    "BLOCK_K": lambda args: 128 // args["a_ptr"].element_size(),  # a K step: 128 bytes of a row
    "STORE_HALVES": lambda args: args["BLOCK_N"] == 256 and args["a_ptr"].element_size() == 4,
    "num_stages": lambda args: 3 if args["BLOCK_N"] == 256 else 4,
    "num_warps": lambda args: 8,  # 256 threads share a 128-row tile
})  # fmt: skip
@triton.jit(do_not_specialize=["M", "N", "K", "stride_a", "stride_b", "stride_cm"])
def matmul_persistent_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, pre_ptr, M, N, K,  # as matmul_pointer_kernel's
    stride_a, stride_b, stride_cm,  # elements between rows of a_ptr's matrix, b_ptr's, and C
    PROGRAMS: tl.constexpr,  # programs, one per SM
    A_TRANSPOSED: tl.constexpr, B_TRANSPOSED: tl.constexpr,  # a_ptr holds A^T, b_ptr B^T: below
    INPUT_PRECISION: tl.constexpr, ACTIVATION: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STORE_HALVES: tl.constexpr,  # the heuristics'
):  # fmt: skip
    BLOCK_M: tl.constexpr = 128  # the tile's rows, as wide_tiles counts them
    GROUP_M: tl.constexpr = 8
    if A_TRANSPOSED:  # descriptors, each made once for the whole loop: no pointers, no masks
        a_desc = tl.make_tensor_descriptor(a_ptr, [K, M], [stride_a, 1], [BLOCK_K, BLOCK_M])
    else:
        a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [stride_a, 1], [BLOCK_M, BLOCK_K])
    if B_TRANSPOSED:
        b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [stride_b, 1], [BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [stride_b, 1], [BLOCK_K, BLOCK_N])
    C_COLUMNS: tl.constexpr = BLOCK_N // (1 + STORE_HALVES)  # columns of each store
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BLOCK_M, C_COLUMNS])
    if pre_ptr is not None:  # P has C's strides
        pre_desc = tl.make_tensor_descriptor(pre_ptr, [M, N], [stride_cm, 1], [BLOCK_M, C_COLUMNS])
    # store_tile equals `tile` at each store but is a counter of its own, as in Triton's tutorial
    # 09 (there: the pipeliner mishandled one value used by the next tile's loads and this store).
    store_tile = tl.program_id(0) - PROGRAMS  # starts a stride behind; += PROGRAMS at each store
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), tiles, PROGRAMS, flatten=True):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        row, col, acc = pid_m * BLOCK_M, pid_n * BLOCK_N, tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k in range(0, K, BLOCK_K):  # (`a if c else b` on a constexpr: decided when compiling)
            a = a_desc.load([k, row]).T if A_TRANSPOSED else a_desc.load([row, k])
            b = b_desc.load([col, k]).T if B_TRANSPOSED else b_desc.load([k, col])
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        store_tile += PROGRAMS
        pid_m, pid_n = grouped_tile(store_tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        row, col = pid_m * BLOCK_M, pid_n * BLOCK_N
        acc = add_bias(acc, bias_ptr, col + tl.arange(0, BLOCK_N), N)
        if pre_ptr is not None:
            store_c_tile(pre_desc, acc, row, col, STORE_HALVES)
        store_c_tile(c_desc, activate(acc, ACTIVATION), row, col, STORE_HALVES)


@functools.cache
def sm_count(device):  # SMs of a CUDA device; 3 under the interpreter, to walk several tiles
    properties = None if common.INTERPRETED else torch.cuda.get_device_properties(device)
    return properties.multi_processor_count if properties else 3


def launch_persistent(a, b, c, bias=None, pre=None, activation=None):
    """c = a @ b through the persistent kernel, for inputs that persistent_problem accepts."""
    (m, k), n, programs = a.shape, b.shape[1], sm_count(a.device)
    a_arg, a_t, b_arg, b_t = persistent_operands(a, b)
    common.set_descriptor_allocator()  # a descriptor made in a kernel needs scratch memory
    matmul_persistent_kernel[(programs,)](
        a_arg, b_arg, c, bias, pre, m, n, k, a_arg.stride(0), b_arg.stride(0), c.stride(0),
        PROGRAMS=programs, A_TRANSPOSED=a_t, B_TRANSPOSED=b_t, ACTIVATION=activation,
        INPUT_PRECISION=input_precision(a.dtype),  # BLOCK_N and the rest: the heuristics
    )  # fmt: skip


def persistent_problem(a, b, c):
    """Why descriptors cannot take c = a @ b, or None: C row-major, A and B may be .T views."""
    if a.dtype == torch.float64:  # matmul runs float64 on the pointer kernel
        return "matmul_persistent: takes 16-bit and float32 only; matmul_pointer takes float64"
    tf32 = input_precision(a.dtype) == "tf32"  # (TF32 copies what a descriptor cannot take)
    for name, t in ([] if tf32 else [("a", a), ("b", b)]) + [("the output", c)]:
        if reason := common.descriptor_problem(t.T if transposed(t) and t is not c else t):
            where = f"{name} {tuple(t.shape)} strides {t.stride()}"
            return f"matmul_persistent: a tensor descriptor cannot describe {where}: {reason}"


# ## Transposed operands
# Autograd hands matmul .T views (dA = dC @ B^T, dB = A^T @ dC), whose last stride is not 1. So the
# kernel describes A^T (last stride 1) and takes each tile's .T (A_TRANSPOSED, B_TRANSPOSED): 16-bit
# tensor cores read a tile in either order. TF32 ones need K contiguous: transpose_kernel copies a
# .T A and a row-major B (to B^T) first, cheaper than rearranging each tile (NOTES item 60).
def transposed(t):  # whether t is a transposed view (columns contiguous, rows not): read t.T
    return t.stride(-1) != 1 and t.stride(0) == 1


@triton.jit
def transpose_kernel(
    x_ptr, xt_ptr,  # X (rows, cols), any strides; X^T (cols, rows), rows contiguous, written here
    rows, cols, stride_xr, stride_xc, stride_xt,  # X's shape and strides; X^T's row stride
    BLOCK: tl.constexpr,  # side of the square tile each program moves
):  # fmt: skip
    tiles_c = tl.cdiv(cols, BLOCK)
    rs = (tl.program_id(0) // tiles_c) * BLOCK + tl.arange(0, BLOCK)
    cs = (tl.program_id(0) % tiles_c) * BLOCK + tl.arange(0, BLOCK)
    x_ptrs = x_ptr + rs.to(tl.int64)[:, None] * stride_xr + cs.to(tl.int64)[None, :] * stride_xc
    tile = tl.load(x_ptrs, mask=(rs[:, None] < rows) & (cs[None, :] < cols))
    # tl.trans moves the tile between threads: a row-major X is read, and X^T written, by rows.
    xt_ptrs = xt_ptr + cs.to(tl.int64)[:, None] * stride_xt + rs[None, :]
    tl.store(xt_ptrs, tl.trans(tile), mask=(cs[:, None] < cols) & (rs[None, :] < rows))


def persistent_operands(a, b):
    """(A's matrix, A_TRANSPOSED, B's, B_TRANSPOSED), read where they lie; TF32 reads A and B^T."""
    if input_precision(a.dtype) == "tf32":
        return rows_contiguous(a), False, rows_contiguous(b.T), True
    a_t, b_t = transposed(a), transposed(b)
    return (a.T if a_t else a), a_t, (b.T if b_t else b), b_t


def rows_contiguous(t, block=64):
    """t if a descriptor can read it, else a copy with contiguous rows, padded to 16 bytes."""
    if common.descriptor_problem(t) is None:
        return t
    rows, cols = t.shape
    padded = triton.cdiv(cols * t.element_size(), 16) * 16 // t.element_size()
    copy = torch.empty((rows, padded), dtype=t.dtype, device=t.device)[:, :cols]
    grid = (triton.cdiv(cols, block) * triton.cdiv(rows, block),)
    transpose_kernel[grid](t.T, copy, cols, rows, *t.T.stride(), copy.stride(0), BLOCK=block)
    return copy


# ## Beyond the kernels: matmul as a drop-in op (dispatch, checks, out=, autograd, torch.compile)
def pick(a, b, c):
    """The kernel matmul runs for c = a @ b: "persistent" for 16-bit and TF32 dots that descriptors
    take, unless M <= 128 (one row of tiles: smaller tiles win, NOTES 43, 60); else "pointer"."""
    fast_dot = c.dtype in (torch.float16, torch.bfloat16) or input_precision(c.dtype) == "tf32"
    many_rows = a.shape[0] > 128
    return "persistent" if fast_dot and many_rows and not persistent_problem(a, b, c) else "pointer"


def launch_best(a, b, c, **epilogue):
    if pick(a, b, c) == "persistent":
        launch_persistent(a, b, c, **epilogue)
    else:  # exact float32 reads a row-major B faster: a transposed one is copied (NOTES 60, 63)
        exact = a.dtype == torch.float32 and input_precision(a.dtype) == "ieee"
        launch_pointer(a, rows_contiguous(b) if exact and transposed(b) else b, c, **epilogue)


def run(launch, a, b, out=None, name="matmul", bias=None, activation=None, keep_pre=False):
    """a @ b + bias, activated, through launch into out or a new C; keep_pre: (C, P or empty)."""
    m, n, k = validate(a, b, name, bias, activation)
    inputs = [t for t in (a, b, bias) if t is not None]
    if name != "matmul" and torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
        raise ValueError(f"{name} records no gradients and an input requires grad: call matmul")
    c = common.kernel_out(out, (m, n), a.dtype, a.device, inputs)  # new if out overlaps an input
    pre = torch.empty_like(c) if keep_pre and activation else None  # P, with C's strides
    if common.INTERPRETED and a.dtype == torch.bfloat16:  # the interpreter's tl.dot multiplies
        a, b = a.float(), b.float()  # bfloat16 as 16-bit integers: give it float32 to multiply
    bias = None if bias is None else bias.contiguous()  # the kernels read bias_ptr + column
    epilogue = dict(bias=bias, pre=pre, activation=activation)  # matmul_simple takes none
    if c.numel():  # (K = 0: the pointer kernel stores sums of no products, with the epilogue)
        launch = launch if k else launch_pointer
        if launch is launch_persistent and (problem := persistent_problem(a, b, c)):
            raise ValueError(problem)  # (matmul's launch_best asks pick, which checks)
        launch(a, b, c, **(epilogue if bias is not None or activation else {}))
    c = common.write_out(c, out)  # out, if given, with its version bumped
    return (c, c.new_empty(0) if pre is None else pre) if keep_pre else c


LAUNCHES = {"simple": matmul_simple, "pointer": launch_pointer, "persistent": launch_persistent}
VARIANTS = {name: functools.partial(run, f, name=f"matmul_{name}") for name, f in LAUNCHES.items()}


def validate(a, b, name="matmul", bias=None, activation=None):
    """(M, N, K), or a TypeError or ValueError naming the problem."""
    inputs = {"a": a, "b": b} if bias is None else {"a": a, "b": b, "bias": bias}
    for arg, t in inputs.items():
        if not isinstance(t, torch.Tensor) or t.dtype not in DTYPES.values():
            got = f"dtype {t.dtype}" if isinstance(t, torch.Tensor) else type(t).__name__
            raise TypeError(f"{name}: {arg} must be a tensor of {', '.join(DTYPES)}, got {got}")
        if t.dim() != (dims := 1 if arg == "bias" else 2):
            raise ValueError(f"{name}: {arg} must be {dims}-D, got shape {tuple(t.shape)}")
    if len({t.dtype for t in inputs.values()}) > 1:
        dtypes = ", ".join(f"{arg} {t.dtype}" for arg, t in inputs.items())
        raise TypeError(f"{name}: the inputs must have one dtype, got {dtypes}")
    if len({t.device for t in inputs.values()}) > 1 or a.device.type != common.DEVICE.type:
        where = ", ".join(f"{arg} is on {t.device}" for arg, t in inputs.items())
        raise ValueError(f"{name}: {where}; expected one {common.DEVICE.type}")
    if a.shape[1] != b.shape[0]:
        shapes = f"a {tuple(a.shape)} and b {tuple(b.shape)}"
        raise ValueError(f"{name}: {shapes} do not chain: {a.shape[1]} != {b.shape[0]}")
    if bias is not None and bias.shape[0] != b.shape[1]:
        raise ValueError(f"{name}: bias has shape {tuple(bias.shape)}, expected ({b.shape[1]},)")
    if activation not in ACTIVATIONS:
        raise ValueError(f"{name}: activation must be one of {ACTIVATIONS}, got {activation!r}")
    return a.shape[0], b.shape[1], a.shape[1]


# ## Autograd: a torch.autograd.Function
# For a loss L, dL/dA = dC @ B^T and dL/dB = A^T @ dC: the same product on transposed views, which
# matmul reads as stored. With the epilogue, C = GELU(P) for P = A @ B + bias: dP = dC * GELU'(P)
# (PyTorch's gelu_backward) takes dC's place, and dbias = dP.sum(0). backward() calls matmul, so
# that with create_graph=True (second derivatives) autograd records it too, and then recomputes P.
class Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, bias, activation):
        forward = matmul_op if torch.compiler.is_compiling() else matmul_and_pre  # (see the op)
        c, pre = forward(a, b, bias, activation)
        ctx.activation = activation
        ctx.save_for_backward(a, b, bias, pre)
        return c

    @staticmethod
    def backward(ctx, grad_c):
        a, b, bias, pre = ctx.saved_tensors
        if ctx.activation:
            pre = matmul(a, b, bias=bias) if torch.is_grad_enabled() else pre  # create_graph
            grad_c = torch.ops.aten.gelu_backward(grad_c, pre, approximate="tanh")
        grad_a = matmul(grad_c, b.T) if ctx.needs_input_grad[0] else None
        grad_b = matmul(a.T, grad_c) if ctx.needs_input_grad[1] else None
        grad_bias = grad_c.sum(0) if ctx.needs_input_grad[2] else None
        return grad_a, grad_b, grad_bias, None


def matmul_and_pre(
    a: Tensor, b: Tensor, bias: Tensor | None = None, activation: str | None = None
) -> tuple[Tensor, Tensor]:
    """(C, P): P = a @ b + bias, which the backward needs, is empty without an activation."""
    return run(launch_best, a, b, bias=bias, activation=activation, keep_pre=True)


def matmul(a, b, out=None, *, bias=None, activation=None):
    """a @ b + bias, activated (ACTIVATIONS), for a (M, K), b (K, N), bias (N,) or None of one float
    dtype and any strides, float32 as torch's TF32 setting says: differentiable, or into out."""
    wants_grad = any(getattr(t, "requires_grad", False) for t in (a, b, bias))
    if torch.compiler.is_compiling() or (out is None and wants_grad and torch.is_grad_enabled()):
        return common.write_out(Matmul.apply(a, b, bias, activation), out)
    return run(launch_best, a, b, out, bias=bias, activation=activation)  # no autograd


# ## The registered op: torch.ops.triton_lessons.matmul, for torch.compile
# custom_op makes matmul_and_pre an op that torch.compile records as one node it does not open; its
# fake gives the outputs' shapes and dtypes, validating as matmul does. Matmul gives it gradients.
matmul_op = torch.library.custom_op("triton_lessons::matmul", mutates_args=())(matmul_and_pre)


@matmul_op.register_fake
def matmul_fake(a, b, bias=None, activation=None):
    m, n, _ = validate(a, b, "matmul", bias, activation)
    return a.new_empty((m, n)), a.new_empty((m, n) if activation else (0,))


# ## Benchmark and command line
def variants_for(a, b):
    """{name: function} of the VARIANTS that take a @ b (descriptors may not), and matmul."""
    refused = persistent_problem(a, b, a.new_empty((a.shape[0], b.shape[1])))
    taken = {name: f for name, f in VARIANTS.items() if not (name == "persistent" and refused)}
    return taken | {"matmul": matmul}


def benchmark(m, n, k, dtype="float16"):
    """GPU and host time of a @ b: each variant that takes row-major inputs, matmul, a bare launch
    of the kernel it picks, torch.matmul; TFLOP/s. Float32 at torch's matmul precision (SWEEP's)."""
    dtype = DTYPES.get(dtype, dtype)
    a, b = random_matrix(m, k, dtype), random_matrix(k, n, dtype)
    c, precision = a.new_empty((m, n)), input_precision(dtype)
    calls = {name: lambda f=f: f(a, b) for name, f in variants_for(a, b).items()}
    # The kernel matmul picks, launched with its arguments made ahead: no Python around it.
    picked = pick(a, b, c) if min(m, n, k) > 0 else None  # None: no launch
    if picked == "persistent":
        (a_arg, a_t, b_arg, b_t), programs = persistent_operands(a, b), sm_count(a.device)
        kernel, grid = matmul_persistent_kernel, (programs,)
        args = (a_arg, b_arg, c, None, None, m, n, k, a_arg.stride(0), b_arg.stride(0), c.stride(0))
        named = dict(PROGRAMS=programs, A_TRANSPOSED=a_t, B_TRANSPOSED=b_t, ACTIVATION=None)
        common.set_descriptor_allocator()
    else:
        kernel, grid, named = matmul_pointer_kernel, tile_grid(m, n), dict(ACTIVATION=None)
        args = (a, b, c, None, None, m, n, k, *a.stride(), *b.stride(), *c.stride())
    if picked:
        bare = lambda: kernel[grid](*args, INPUT_PRECISION=precision, **named)  # noqa: E731
        calls[f"matmul_{picked}_kernel[grid] bare"] = bare
    calls["torch"] = lambda: reference(a, b)
    if not common.INTERPRETED:  # a second of torch.matmul: the GPU's sustained clock (NOTES 28)
        triton.testing.do_bench(calls["torch"], warmup=1000, rep=1)
    times = {name: common.measure(call) for name, call in calls.items()}
    case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')}"
    case += f" {precision}" if dtype == torch.float32 else ""
    flops = 2 * m * n * k  # a multiply and an add for each term of each dot product
    return [
        common.timing_row(case, name, t, times["torch"], common.tflops(flops, t[0]), "TFLOP/s")
        for name, t in times.items()
    ]


# `make bench` on a GPU: large cubes, then the shapes that taught the dispatch rule.
CUBE_DTYPES = ("float16", "bfloat16", "float32")  # float32 at precision "high": TF32
SWEEP = [dict(m=n, n=n, k=n, dtype=d, precision="high") for n in (4096, 8192) for d in CUBE_DTYPES]
SHAPES = [(4000, 4000, 4000), (8192, 8192, 512), (128, 4096, 4096), (16, 8192, 8192)]
SHAPES += [(1000, 1001, 999)]  # odd sizes: rows not 16-byte aligned
SWEEP += [dict(m=m, n=n, k=k, dtype=d) for d in ("float16", "bfloat16") for m, n, k in SHAPES]


def main(argv=None):
    parser = tools.lesson_parser(sys.modules[__name__])  # also --draw, --asm: tools/
    size = 256 if common.INTERPRETED else 4096  # the interpreter runs programs one at a time
    parser.add_argument("--m", type=int, default=size, help="rows of A and C")
    parser.add_argument("--n", type=int, default=size, help="columns of B and C")
    parser.add_argument("--k", type=int, default=size, help="columns of A, rows of B")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float16", help="of A, B and C")
    precision, choices = torch.get_float32_matmul_precision(), ["highest", "high", "medium"]
    about = "float32: torch.set_float32_matmul_precision, for the process (highest: no TF32)"
    parser.add_argument("--precision", choices=choices, default=precision, help=about)
    args = parser.parse_args(argv)
    if min(args.m, args.n, args.k) < 0:
        parser.error(f"sizes must be 0 or more, got --m {args.m} --n {args.n} --k {args.k}")
    dtype, shape = DTYPES[args.dtype], f"{args.m}x{args.n}x{args.k}"
    print(common.describe_run())
    torch.set_float32_matmul_precision(args.precision)
    a, b = random_matrix(args.m, args.k, dtype), random_matrix(args.k, args.n, dtype)
    for name, fn in (variants := variants_for(a, b)).items():
        check(fn, a, b, f"{name} {shape} {args.dtype}")
    print(f"check {shape} {args.dtype}: {', '.join(variants)} match float64\n")
    common.print_table(benchmark(args.m, args.n, args.k, dtype), common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
