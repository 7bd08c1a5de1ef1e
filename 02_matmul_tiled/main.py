"""Tiled matrix multiplication: C = A @ B on the tensor cores.

What you learn: how one program computes a whole tile of C with
tl.dot, which runs on the tensor cores (the GPU's matrix units);
then, one change a section, how such a kernel reaches cuBLAS's
speed. Lesson 01 defines programs, blocks, strides and masks.

The maths. For A (M, K) and B (K, N):

    C[i, j] = sum over k of A[i, k] * B[k, j]

Cut C into tiles of BLOCK_M x BLOCK_N (BM x BN), one program
each. The program for rows m:m+BM and columns n:n+BN of C runs,
in PyTorch, BK (BLOCK_K) values of k a step:

    acc = torch.zeros(BM, BN)
    for k in range(0, K, BK):
        acc += A[m:m+BM, k:k+BK] @ B[k:k+BK, n:n+BN]
    C[m:m+BM, n:n+BN] = acc

A loaded tile of A serves BN columns of C, so A is read N / BN
times, not N times as in lesson 01.

Worked example, tiles of 2 (on a GPU, 16 or more): A (3, 4) and
B (4, 5), row-major: strides (4, 1) and (5, 1). C has 2 rows of
tiles and 3 columns. Program 4 takes tile row 4 // 3 = 1, tile
column 4 % 3 = 1: rows = [2, 3], cols = [2, 3]. Its loop takes
k = 0, then 2; ks = [0, 1]. It loads A at offsets
rows[:, None] * 4 + (k + ks)[None, :], B at
(k + ks)[:, None] * 5 + cols[None, :] (a column plus a row
broadcasts to a grid, as in torch):

    k = 0:  A [[ 8,  9], [ -,  -]]   B [[ 2,  3], [ 7,  8]]
    k = 2:  A [[10, 11], [ -,  -]]   B [[12, 13], [17, 18]]

Row 3 is past M = 3 ("-"): the mask rows < M turns its loads off
(they give 0) and its store. So the program stores C[2, 2:4].
"""

import functools
import sys
from pathlib import Path

import torch

# common (the lessons' helper, at the repository's root) makes
# Triton run kernels on the CPU on a machine with no GPU.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (before triton, which it configures)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## Part 1. The simplest tiled kernel: one program per C tile
# tl.dot(a, b, acc) returns acc + a @ b, on the tensor cores.
# 16-bit inputs are multiplied exactly and summed in float32;
# float32 inputs are rounded to TF32 (10-bit mantissas) first.
@triton.jit
def simple_matmul_kernel(
    a_ptr, b_ptr, c_ptr,  # A[0, 0], B[0, 0] and C[0, 0]
    M, N, K,  # C is M x N; each sum has K terms
    stride_am, stride_ak,  # A's strides: next row, next column
    stride_bk, stride_bn, stride_cm, stride_cn,  # B's, C's
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # C's tile
    BLOCK_K: tl.constexpr,  # values of k a step
):  # fmt: skip
    # This program's tile, tiles numbered row by row.
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = tl.program_id(0) // tiles_n
    pid_n = tl.program_id(0) % tiles_n
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        # The worked example's offsets, and masks for the edges.
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


def matmul_simple(a, b):
    """a @ b by simple_matmul_kernel, in 64 x 64 tiles of C."""
    (M, K), N = a.shape, b.shape[1]
    assert K == b.shape[0], "a's columns must match b's rows"
    assert a.dtype != torch.float64, "acc is float32: no float64"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    # int32 offsets: under 2^31 bytes, no element is 2^31 away.
    assert max(t.untyped_storage().nbytes() for t in (a, b, c)) < 2**31
    a, b = common.dot_inputs(a, b)  # on a CPU: bfloat16 as float32
    grid = (triton.cdiv(M, 64) * triton.cdiv(N, 64),)  # one per tile
    strides = (*a.stride(), *b.stride(), *c.stride())
    simple_matmul_kernel[grid](a, b, c, M, N, K, *strides, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return c


def reference(a, b):  # what every kernel here computes
    return a @ b


def check(fn, a, b, what):
    """Test harness (skim it): fn(a, b) and its gradients against
    reference()'s in float64, by common.assert_function_close."""
    grad_c = torch.randn(a.shape[0], b.shape[1], device=a.device).to(a.dtype)
    # Terms in each sum: K for C, N for grad_a, M for grad_b.
    terms, names = (a.shape[1], b.shape[1], a.shape[0]), ("C", "grad_a", "grad_b")
    # Float32 dots may round inputs to TF32: 2^-9 off per product.
    tf32 = 2.0**-9 if a.dtype == torch.float32 else 0.0
    common.assert_function_close(fn, (a, b), grad_c, reference, terms, names, what, tf32)


# ## Gradients: a torch.autograd.Function
# For a loss L of C = A @ B, the chain rule gives
#     grad_a = grad_c @ B^T        grad_b = A^T @ grad_c
# b.T is a view, b's strides swapped, and the kernels take any
# strides: the backward is the forward's kernel, twice. `matmul`
# is the wrapper to launch: matmul_simple, or Part 2's or 3's.
class Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, matmul=matmul_simple):
        ctx.save_for_backward(a, b)
        ctx.matmul = matmul
        return matmul(a, b)

    @staticmethod
    # Autograd cannot see inside a kernel, so it cannot take a
    # second derivative through this backward: asking raises.
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_c):
        a, b, matmul = *ctx.saved_tensors, ctx.matmul
        # c.sum() hands back one value expanded to C's shape
        # (strides 0). Part 3's descriptors cannot read that: copy.
        grad_c = grad_c.contiguous()
        grad_a = matmul(grad_c, b.T) if ctx.needs_input_grad[0] else None
        grad_b = matmul(a.T, grad_c) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b, None


# ## Part 2. matmul_kernel: the simple kernel, six changes
# A section each, then the kernel, each change marked. A first
# read may stop after Part 2: Part 3 is for H100-class GPUs.
#
# ### (group) Grouped program order
# The GPU starts programs roughly in order of their ids, a
# wave at a time (as many as fit on its SMs, streaming
# multiprocessors: its cores). A tile that a wave reads twice
# comes the second time from the L2 cache (on-chip memory that
# keeps recent reads). A strip of A is the BLOCK_M rows that a
# row of C tiles reads. In row-major order a wave computes whole
# rows of C tiles: a strip of A, every strip of B. Grouped order
# walks GROUP_M tile rows down, then right. Below, a wave of 4
# reads 1 strip of A and 4 of B row-major, 2 and 2 grouped. On
# `--draw`'s 9 x 9 grid, GROUP_M = 3: a wave of 9 reads 10 vs 6:
#
#     row-major:   0  1  2  3      grouped,      0  2  4  6
#                  4  5  6  7      GROUP_M = 2:  1  3  5  7
#                  8  9 10 11                    8 10 12 14
#                 12 13 14 15                    9 11 13 15
@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(tile row, tile column) of program pid in grouped order."""
    tiles_per_group = GROUP_M * tl.cdiv(N, BLOCK_N)
    group, in_group = pid // tiles_per_group, pid % tiles_per_group
    first_row = group * GROUP_M
    # Down the group's rows (%), then right (//); the last group
    # may have fewer rows.
    group_rows = min(tl.cdiv(M, BLOCK_M) - first_row, GROUP_M)
    row = first_row + in_group % group_rows
    return row, in_group // group_rows  # pid 5: row 1, column 2


# ### (int64) and (step): offsets
# int32 offsets wrap around past 2^31 (row * stride_am in a large
# A): the kernel's are int64. Those cost more to compute, so it
# makes the pointers for k = 0 once, and adds BLOCK_K columns'
# worth to them each step. Its mask on k, ks < K - k, is the
# simple kernel's k + ks < K, for pointers already at k.
#
# ### (precision) Float32 and float64
# matmul_simple always rounds float32 inputs to TF32; PyTorch,
# only where torch.set_float32_matmul_precision allows. The
# constexpr INPUT_PRECISION passes torch's choice to tl.dot.
# Float64 inputs make tl.dot add in float64: acc must be float64.
def input_precision(dtype):
    """tl.dot's input_precision for dtype, as torch.matmul's."""
    tf32 = torch.get_float32_matmul_precision() != "highest"
    return "tf32" if dtype == torch.float32 and tf32 else "ieee"


# ### (epilogue) Bias and GELU, fused into the store
# The epilogue: the code after the K loop, which writes C. A
# model's layer computes GELU(A @ B + bias): PyTorch's matmul
# writes P = A @ B + bias, then a second kernel reads P back and
# writes GELU(P). Here the kernel adds the bias and applies GELU
# to acc, in registers, and writes C once. GELU(P) = P * Φ(P),
# Φ the normal distribution's CDF, which GPT-2 approximates
# with tanh: Φ(P) ≈ sigmoid(y), y = 2√(2/π) (P + 0.044715 P^3).
# pre_ptr, where given, keeps P for op.py's backward.
@triton.jit
def add_bias(acc, bias_ptr, cols, N):
    """acc + bias[cols] on every row; acc if bias_ptr is None."""
    # None is known when Triton compiles: the `if` costs nothing.
    if bias_ptr is not None:
        bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0)
        acc += bias.to(acc.dtype)[None, :]
    return acc


@triton.jit
def activate(acc, ACTIVATION: tl.constexpr):  # None, "gelu_tanh"
    if ACTIVATION == "gelu_tanh":  # 1.5958: 2√(2/π)
        y = 1.5957691216057308 * (acc + 0.044715 * acc * acc * acc)
        acc = acc * tl.sigmoid(y)
    return acc


# ### (tune) Autotuning the tile
# The best tile depends on the sizes and dtype: large tiles load
# less per multiply-add; small ones give every SM a program. A
# triton.Config holds a tile and two launch options:
# - num_warps: the program's threads, in warps of 32;
# - num_stages: K steps in flight. The loads of the next steps
#   fill shared memory (the SM's small fast memory) while the
#   tensor cores multiply this one.
TILES = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps
    (128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 256, 32, 4, 8),
    (256, 128, 32, 3, 8), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
    (128, 64, 32, 4, 4), (64, 256, 32, 4, 4), (64, 64, 32, 3, 4),
    (64, 64, 128, 4, 4), (16, 64, 256, 3, 4),  # 16 rows: a small M
]  # fmt: skip
if common.INTERPRETED:  # it cannot time configs: it gets one
    TILES = [(64, 64, 32, 1, 4)]
CONFIGS = [
    triton.Config(dict(BLOCK_M=m, BLOCK_N=n, BLOCK_K=k, GROUP_M=8), num_stages=s, num_warps=w)
    for m, n, k, s, w in TILES
]


# @triton.autotune(configs=CONFIGS, key=["M", "N", "K"]) on a
# kernel times every config at the first launch with new values
# of the key's arguments, and keeps the fastest for them. Below,
# the key takes M and K rounded up to powers of 2, passed as two
# more arguments (M_BUCKET, K_BUCKET): a new token count reuses a
# pick. The layout (stride_ak, stride_bn) and precision join; the
# dtypes too. do_bench times each config (5 ms of warm-up, 20 of
# timing); cache_results keeps picks on disk.
@triton.autotune(  # (tune)
    configs=CONFIGS,
    key=["M_BUCKET", "N", "K_BUCKET", "stride_ak", "stride_bn", "INPUT_PRECISION"],
    do_bench=functools.partial(triton.testing.do_bench, warmup=5, rep=20),
    cache_results=True,
)
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    bias_ptr, pre_ptr,  # (epilogue): None where not used
    M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
    stride_cm, stride_cn,  # P, if kept, has C's strides
    M_BUCKET, K_BUCKET,  # (tune) for the key, which names arguments
    INPUT_PRECISION: tl.constexpr,  # (precision)
    ACTIVATION: tl.constexpr,  # (epilogue)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # (group)
):  # fmt: skip
    c_dtype = c_ptr.dtype.element_ty
    acc_dtype = tl.float64 if c_dtype == tl.float64 else tl.float32  # (precision)
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K).to(tl.int64)  # (int64)
    # (step) the pointers for k = 0
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=acc_dtype)
    for k in range(0, K, BLOCK_K):  # (step) masks: ks < K - k
        a_mask = (rows[:, None] < M) & (ks[None, :] < K - k)
        b_mask = (ks[:, None] < K - k) & (cols[None, :] < N)
        a = tl.load(a_ptrs, mask=a_mask, other=0.0)
        b = tl.load(b_ptrs, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, out_dtype=acc_dtype)
        # (step), in int64: BLOCK_K * stride_ak may pass 2^31
        a_ptrs += tl.cast(BLOCK_K, tl.int64) * stride_ak
        b_ptrs += tl.cast(BLOCK_K, tl.int64) * stride_bk
    c_offsets = rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    acc = add_bias(acc, bias_ptr, cols, N)  # (epilogue)
    if pre_ptr is not None:  # P, kept for the backward
        tl.store(pre_ptr + c_offsets, acc.to(c_dtype), mask=c_mask)
    c = activate(acc, ACTIVATION).to(c_dtype)
    tl.store(c_ptr + c_offsets, c, mask=c_mask)


def tile_grid(M, N):  # meta: the picked config's values by name
    return lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)


def matmul_tuned(a, b, bias=None, activation=None):
    """a @ b by matmul_kernel, + bias and activated if asked."""
    (M, K), N = a.shape, b.shape[1]
    assert K == b.shape[0], "a's columns must match b's rows"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    a, b = common.dot_inputs(a, b)  # on a CPU: bfloat16 as float32
    strides = (*a.stride(), *b.stride(), *c.stride())
    buckets = (triton.next_power_of_2(M), triton.next_power_of_2(K))
    matmul_kernel[tile_grid(M, N)](
        a, b, c, bias, None, M, N, K, *strides, *buckets,
        INPUT_PRECISION=input_precision(c.dtype), ACTIVATION=activation,
    )  # fmt: skip
    return c


# ## Part 3. persistent_matmul_kernel: cuBLAS's speed
# For 16-bit and float32 inputs. Five ideas, a section each, then
# the kernel, each idea marked.
#
# ### (desc) Tensor descriptors: tiles without pointers or masks
# tl.make_tensor_descriptor(base, shape, strides, block shape)
# describes a matrix once. desc.load([row, col]) reads the block
# that starts there, with 0 past the edges; desc.store drops
# what lies past them. On an H100 a load is one TMA copy (by the
# Tensor Memory Accelerator, a copy engine). Rules: the base on
# a 16-byte boundary, the last stride 1, the other strides
# multiples of 16 bytes. An H200 returned wrong numbers, with
# no error, when one was broken: persistent_problem checks them.
#
# ### (persist) Persistent programs
# With a program per C tile, an SM idles between programs, until
# the next one's first loads arrive. A persistent kernel starts
# one program per SM (PROGRAMS); program p walks tiles p,
# p + PROGRAMS, ... in grouped order (`main.py --draw` shows it).
# tl.range(..., flatten=True) merges the tile loop and the K
# loop into one, so the loads for the next tile's first K steps
# are issued while this tile is being stored.
#
# ### (heuristics) The tile, picked by a rule
# The autotuner picked worse tiles here when other work had run
# on the GPU, so a rule picks: wide tiles (128 x 256) unless
# narrow ones (128 x 128) keep the programs 10% busier. 3072^2
# on 132 SMs: 288 wide tiles take 3 turns of 132 programs, 73%
# busy; 576 narrow ones take 5 turns, 87% busy.
# @triton.heuristics({name: f}) on the kernel sets the argument
# `name` to f(args) at each launch, args the arguments by name.
@functools.cache  # once per shape
def wide_tiles(M, N, programs):
    """Whether C's tiles are 128 x 256 rather than 128 x 128."""
    tiles = {bn: triton.cdiv(M, 128) * triton.cdiv(N, bn) for bn in (128, 256)}
    # The share of program turns that have a tile to compute.
    busy = {bn: t / (triton.cdiv(t, programs) * programs) for bn, t in tiles.items()}
    return 1.1 * busy[256] >= busy[128]


# ### (halves) Storing C in halves
# A 128 x 256 float32 tile outgrows the shared memory left for
# its store. Narrow tiles would fit, but ran 10% slower in TF32:
# so a float32 tile is stored in two halves. Triton has no
# tile[:, :half]: (R, 256) reshaped to (R, 2, 128), permuted to
# (R, 128, 2), and tl.split in two (R, 128) halves.
@triton.jit
def store_c_tile(desc, tile, row, col, HALVES: tl.constexpr):
    """Stores tile at [row, col]: whole, or in halves."""
    if HALVES:
        half: tl.constexpr = tile.shape[1] // 2
        pairs = tl.reshape(tile, (tile.shape[0], 2, half))
        left, right = tl.split(tl.permute(pairs, (0, 2, 1)))
        desc.store([row, col], left.to(desc.dtype))
        desc.store([row, col + half], right.to(desc.dtype))
    else:
        desc.store([row, col], tile.to(desc.dtype))


# ### (trans) Transposed operands
# The backward hands the kernel .T views (last stride not 1):
# the kernel describes A^T, and takes each tile's .T (A_TRANSPOSED,
# B_TRANSPOSED); 16-bit tensor cores read a tile either way. TF32
# ones need K contiguous: transpose_kernel copies a .T A, B to B^T.
def transposed(t):  # a .T view: read t.T instead
    return t.stride(-1) != 1 and t.stride(0) == 1


@triton.jit
def transpose_kernel(
    x_ptr, xt_ptr,  # X (rows, cols), any strides; X^T
    rows, cols, stride_xr, stride_xc,
    stride_xt,  # X^T's row stride (its columns are contiguous)
    BLOCK: tl.constexpr,  # each program moves BLOCK x BLOCK
):  # fmt: skip
    tiles_c = tl.cdiv(cols, BLOCK)
    rs = (tl.program_id(0) // tiles_c) * BLOCK + tl.arange(0, BLOCK)
    cs = (tl.program_id(0) % tiles_c) * BLOCK + tl.arange(0, BLOCK)
    rs, cs = rs.to(tl.int64), cs.to(tl.int64)
    x_offsets = rs[:, None] * stride_xr + cs[None, :] * stride_xc
    mask = (rs[:, None] < rows) & (cs[None, :] < cols)
    tile = tl.load(x_ptr + x_offsets, mask=mask)
    # tl.trans: X is read, and X^T written, along their rows.
    xt_offsets = cs[:, None] * stride_xt + rs[None, :]
    xt_mask = (cs[:, None] < cols) & (rs[None, :] < rows)
    tl.store(xt_ptr + xt_offsets, tl.trans(tile), mask=xt_mask)


def rows_contiguous(t, block=64, kernel=transpose_kernel):
    """t, or `kernel`'s copy of it with contiguous 16-byte rows."""
    if common.descriptor_problem(t) is None:
        return t
    rows, cols = t.shape
    per_16 = 16 // t.element_size()  # elements in 16 bytes
    copy = t.new_empty((rows, triton.cdiv(cols, per_16) * per_16))[:, :cols]
    grid = (triton.cdiv(cols, block) * triton.cdiv(rows, block),)
    kernel[grid](t.T, copy, cols, rows, *t.T.stride(), copy.stride(0), BLOCK=block)
    return copy


def persistent_operands(a, b):
    """(A's matrix, A_TRANSPOSED, B's, B_TRANSPOSED) to read."""
    if input_precision(a.dtype) == "tf32":
        return rows_contiguous(a), False, rows_contiguous(b.T), True
    a_t, b_t = transposed(a), transposed(b)
    return (a.T if a_t else a), a_t, (b.T if b_t else b), b_t


def persistent_problem(a, b, c):
    """Why the kernel cannot compute c = a @ b, or None."""
    if a.dtype == torch.float64:
        return "persistent: no float64 (matmul_tuned takes it)"
    tf32 = input_precision(a.dtype) == "tf32"  # A, B then copied
    named = [] if tf32 else [("a", a), ("b", b)]
    for name, t in named + [("the output", c)]:
        t = t.T if transposed(t) and t is not c else t
        if reason := common.descriptor_problem(t):
            where = f"{name} {tuple(t.shape)} strides {t.stride()}"
            return f"persistent: no descriptor for {where}: {reason}"


# ### The kernel, each idea marked
# Triton compiles a new version of a kernel when an int argument
# changes a fact it specializes on (== 1, divisible by 16).
# do_not_specialize lists ints to leave out: a new size reuses it.
@triton.heuristics({  # (heuristics)
    "BLOCK_N": lambda args: 256 if wide_tiles(args["M"], args["N"], args["PROGRAMS"]) else 128,
    # A K step reads 128 bytes of each row: 64 16-bit values.
    "BLOCK_K": lambda args: 128 // args["a_ptr"].element_size(),
    "STORE_HALVES": lambda args: args["BLOCK_N"] == 256 and args["a_ptr"].element_size() == 4,
    "num_stages": lambda args: 3 if args["BLOCK_N"] == 256 else 4,
    "num_warps": lambda args: 8,  # 256 threads, 128-row tiles
})  # fmt: skip
@triton.jit(do_not_specialize=["M", "N", "K", "stride_a", "stride_b", "stride_cm"])
def persistent_matmul_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, pre_ptr,  # as matmul_kernel's
    M, N, K, stride_a, stride_b, stride_cm,  # row strides
    PROGRAMS: tl.constexpr,  # (persist) one per SM
    A_TRANSPOSED: tl.constexpr,  # (trans) a_ptr holds A^T
    B_TRANSPOSED: tl.constexpr,  # b_ptr holds B^T
    INPUT_PRECISION: tl.constexpr, ACTIVATION: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STORE_HALVES: tl.constexpr,
):  # fmt: skip
    BLOCK_M: tl.constexpr = 128  # the tile's rows
    GROUP_M: tl.constexpr = 8
    # (desc) made once for the whole loop; (trans) of A^T, B^T
    if A_TRANSPOSED:
        a_desc = tl.make_tensor_descriptor(a_ptr, [K, M], [stride_a, 1], [BLOCK_K, BLOCK_M])
    else:
        a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [stride_a, 1], [BLOCK_M, BLOCK_K])
    if B_TRANSPOSED:
        b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [stride_b, 1], [BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [stride_b, 1], [BLOCK_K, BLOCK_N])
    C_COLUMNS: tl.constexpr = BLOCK_N // (1 + STORE_HALVES)  # (halves)
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BLOCK_M, C_COLUMNS])
    if pre_ptr is not None:  # P has C's strides
        pre_desc = tl.make_tensor_descriptor(pre_ptr, [M, N], [stride_cm, 1], [BLOCK_M, C_COLUMNS])
    # (persist) store_tile, a counter of its own, equals `tile` at
    # each store: with `tile` in the next tile's loads and in this
    # store, the compiler mishandled it (as Triton's tutorial 09).
    store_tile = tl.program_id(0) - PROGRAMS
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), tiles, PROGRAMS, flatten=True):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        row, col = pid_m * BLOCK_M, pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k in range(0, K, BLOCK_K):
            # (trans) decided when Triton compiles
            a = a_desc.load([k, row]).T if A_TRANSPOSED else a_desc.load([row, k])
            b = b_desc.load([col, k]).T if B_TRANSPOSED else b_desc.load([k, col])
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        store_tile += PROGRAMS
        pid_m, pid_n = grouped_tile(store_tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        row, col = pid_m * BLOCK_M, pid_n * BLOCK_N
        acc = add_bias(acc, bias_ptr, col + tl.arange(0, BLOCK_N), N)
        if pre_ptr is not None:
            store_c_tile(pre_desc, acc, row, col, STORE_HALVES)
        c = activate(acc, ACTIVATION)
        store_c_tile(c_desc, c, row, col, STORE_HALVES)


def matmul_persistent(a, b, bias=None, activation=None):
    """As matmul_tuned, by persistent_matmul_kernel."""
    (M, K), N = a.shape, b.shape[1]
    assert K == b.shape[0], "a's columns must match b's rows"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    assert (problem := persistent_problem(a, b, c)) is None, problem
    a, b = common.dot_inputs(a, b)
    a_arg, a_t, b_arg, b_t = persistent_operands(a, b)
    strides = (a_arg.stride(0), b_arg.stride(0), c.stride(0))
    programs = common.sm_count(a.device)  # one program per SM
    # A descriptor made inside a kernel needs scratch memory.
    common.set_descriptor_allocator()
    persistent_matmul_kernel[(programs,)](
        a_arg, b_arg, c, bias, None, M, N, K, *strides,
        PROGRAMS=programs, A_TRANSPOSED=a_t, B_TRANSPOSED=b_t,
        INPUT_PRECISION=input_precision(c.dtype), ACTIVATION=activation,
    )  # fmt: skip
    return c


VARIANTS = {  # each wrapper, with gradients, by the Function
    "simple": lambda a, b: Matmul.apply(a, b, matmul_simple),
    "tuned": lambda a, b: Matmul.apply(a, b, matmul_tuned),
    "persistent": lambda a, b: Matmul.apply(a, b, matmul_persistent),
}


# ## Timing (the harness: skip it on a first read)
DTYPES = {n: getattr(torch, n) for n in ("float16", "bfloat16", "float32", "float64")}


def variants_for(a, b):
    """The VARIANTS that take a @ b, and its backward's products."""
    c = a.new_empty((a.shape[0], b.shape[1]))
    grad_a, grad_b = a.new_empty(a.shape), b.new_empty(b.shape)
    products = [(a, b, c), (c, b.T, grad_a), (a.T, c, grad_b)]
    takes = dict(simple=a.dtype != torch.float64, tuned=True)
    takes["persistent"] = not any(persistent_problem(*p) for p in products)
    return {name: f for name, f in VARIANTS.items() if takes[name]}


def benchmark(m, n, k, dtype="float16"):
    """GPU, host time and TFLOP/s of each variant, a bare launch."""
    dtype = DTYPES.get(dtype, dtype)
    a, b = common.random_matrix(m, k, dtype), common.random_matrix(k, n, dtype)
    calls = {name: functools.partial(f, a, b) for name, f in variants_for(a, b).items()}
    # A bare launch: its arguments made ahead, no Python around.
    c, precision, grid = a.new_empty((m, n)), input_precision(dtype), tile_grid(m, n)
    buckets = (triton.next_power_of_2(m), triton.next_power_of_2(k))
    args = (a, b, c, None, None, m, n, k, *a.stride(), *b.stride(), *c.stride(), *buckets)
    named = dict(INPUT_PRECISION=precision, ACTIVATION=None)
    calls["matmul_kernel[grid] bare"] = lambda: matmul_kernel[grid](*args, **named)
    calls["torch"] = functools.partial(reference, a, b)
    if not common.INTERPRETED:  # the GPU to its sustained clock
        triton.testing.do_bench(calls["torch"], warmup=1000, rep=1)
    times = {name: common.measure(call) for name, call in calls.items()}
    case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')}"
    case += f" {precision}" if dtype == torch.float32 else ""
    flops = 2 * m * n * k  # a multiply and an add per term
    return [
        common.timing_row(case, name, t, times["torch"], common.tflops(flops, t[0]), "TFLOP/s")
        for name, t in times.items()
    ]


# `make bench`: cubes (float32 in TF32), shapes that taught us.
CUBES = [(n, d) for n in (4096, 8192) for d in ("float16", "bfloat16", "float32")]
SWEEP = [dict(m=n, n=n, k=n, dtype=d, precision="high") for n, d in CUBES]
SHAPES = [(4000,) * 3, (8192, 8192, 512), (128, 4096, 4096), (16, 8192, 8192), (1000, 1001, 999)]
SWEEP += [dict(m=m, n=n, k=k, dtype=d) for d in ("float16", "bfloat16") for m, n, k in SHAPES]


def main(argv=None):
    import tools  # adds --draw and --asm (see the README)

    parser = tools.lesson_parser(sys.modules[__name__])
    size = 256 if common.INTERPRETED else 4096  # (interpreter: slow)
    add = parser.add_argument
    add("--m", type=int, default=size, help="rows of A and C")
    add("--n", type=int, default=size, help="columns of B and C")
    add("--k", type=int, default=size, help="columns of A, rows of B")
    add("--dtype", choices=list(DTYPES), default="float16", help="of A, B and C")
    precision, about = torch.get_float32_matmul_precision(), "float32's matmul precision"
    add("--precision", choices=["highest", "high", "medium"], default=precision, help=about)
    args = parser.parse_args(argv)
    if min(args.m, args.n, args.k) < 0:
        parser.error("sizes must be 0 or more")
    torch.set_float32_matmul_precision(args.precision)
    print(common.describe_run())
    dtype, shape = DTYPES[args.dtype], f"{args.m}x{args.n}x{args.k}"
    a, b = common.random_matrix(args.m, args.k, dtype), common.random_matrix(args.k, args.n, dtype)
    for name, fn in (variants := variants_for(a, b)).items():
        check(fn, a, b, f"{name} {shape} {args.dtype}")
    print(f"check {shape} {args.dtype}: {', '.join(variants)} match float64\n")
    common.print_table(benchmark(args.m, args.n, args.k, dtype), common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
