"""Column sums, out = x.sum(0): a blocked reduction in Triton.

What you learn: the pattern behind Triton's reductions.
Each program adds whole tiles of x into a 2-D accumulator,
acc, and reduces acc to one row only once, after its loop.
Then you make it fast on every shape of x: split a tall x over
more programs, load tiles ahead, and tune the tile. ("Why
reduce once", after Part 1, explains why acc is 2-D.)

Words from lesson 01: a program is a running copy of a kernel,
numbered by tl.program_id. Programs run in parallel, and each
runs on num_warps warps, groups of 32 threads. A block is a
small tensor of fixed shape inside one program, its values
spread over the program's threads. A stride is the step, in
elements, from one index to the next along a dim.
New here: a tile is the 2-D block of x that one step of a
program's loop loads. Each program owns BLOCK_N columns of x.

    out[j]       = sum over i of x[i, j]    one sum per column
    grad_x[i, j] = grad_out[j]              its gradient

In PyTorch, with x padded with zeros to whole tiles:

    for cols in groups of BLOCK_N columns:  # one program per group
        acc = torch.zeros(BLOCK_M, BLOCK_N)
        for i0 in range(0, M, BLOCK_M):     # one step per tile
            acc += x[i0 : i0 + BLOCK_M, cols]
        out[cols] = acc.sum(0)

Worked example: x has shape (5, 6) and is stored row after
row, so x[i, j] lies i * 6 + j elements after x[0, 0]. Its
strides are stride_m = 6 and stride_n = 1. With BLOCK_N = 4 there
are cdiv(6, 4) = 2 programs (cdiv: division rounded up). Program 1
owns cols = [4, 5, 6, 7]. With BLOCK_M = 2, its steps take
rows [0, 1], [2, 3] and [4, 5]. Its first step loads x at offsets:

    rows[:, None] * 6 + cols[None, :]
        = [[0], [1]] * 6 + [[4, 5, 6, 7]] = [[ 4,  5,  6,  7],
                                             [10, 11, 12, 13]]

Columns 6 and 7 lie past x's edge (N = 6), and row 5 lies past
its end. Without masks, program 1 would load:
- at columns 6 and 7 of rows 0 to 3, the next row's first
  values, into sums that the store drops (cols < N): harmless.
- at columns 6 and 7 of row 4 and all of row 5, memory past x's
  end, which may fault; row 5's would be added to out[4], out[5].
With the masks, those loads read nothing and give 0.
`main.py --draw picture.png` draws this from the kernel itself.
"""

import functools
import sys
from pathlib import Path

import torch

# Import common, the lessons' helper, before triton. With no
# GPU, it sets TRITON_INTERPRET=1, which triton reads on import.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## Part 1. The simplest kernel: one program per BLOCK_N columns
# @triton.jit makes a Python function a kernel, compiled for the
# GPU at its first launch. A tensor argument arrives as a pointer
# to its first element. tl.load and tl.store read and write there.
@triton.jit
def simple_column_sum_kernel(
    x_ptr, out_ptr,  # pointers to x[0, 0] and out[0]
    M, N, stride_m, stride_n,  # x's sizes and strides
    # tl.constexpr marks a compile-time constant. Block shapes
    # must be constants. Each new value triggers a recompile.
    BLOCK_M: tl.constexpr,  # rows per step, a power of 2
    BLOCK_N: tl.constexpr,  # columns per program, a power of 2
):  # fmt: skip
    # tl.arange(0, n) is the block 0, 1, ..., n - 1 (n a power of 2).
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    # acc holds float32 sums, because 16-bit sums drop small terms.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in range(0, M, BLOCK_M):  # each program runs the steps in turn
        rows = i0 + tl.arange(0, BLOCK_M)
        # This broadcasts, as in torch, to (BLOCK_M, BLOCK_N).
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        mask = (rows < M)[:, None] & col_mask[None, :]
        tile = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        acc += tile.to(tl.float32)  # elementwise, not a sum
    sums = tl.sum(acc, axis=0)  # acc's rows are added up here, once
    # out_ptr.dtype.element_ty is the dtype that out_ptr points to.
    tl.store(out_ptr + cols, sums.to(out_ptr.dtype.element_ty), mask=col_mask)


def column_sums_simple(x, kernel=simple_column_sum_kernel):
    """x.sum(0) by `kernel`, Part 1's kernel by default."""
    M, N = x.shape
    within_limits(x)  # no float64, no int32 overflow (the harness)
    out = torch.empty(N, dtype=x.dtype, device=x.device)
    BLOCK_M, BLOCK_N = 16, 64  # a tile of 16 x 64
    grid = (triton.cdiv(N, BLOCK_N),)  # one program per 64 columns
    # kernel[grid] starts grid[0] programs, each on 4 warps.
    kernel[grid](x, out, M, N, *x.stride(), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4)
    return out


def reference(x):  # what every kernel here computes
    return x.sum(0)


# ## Is it right?
# check() compares fn(x) with reference() computed in float64.
# It allows for the rounding of float32 sums of M terms.
def check(fn, x, name):
    common.assert_close_to_float64(fn(x), reference, (x,), terms=x.shape[0], what=name)


# ## Try it: the docstring's example, which main() runs first
# Part 1's kernel, launched by hand on x[i, j] = 6i + j, gives out = [60.0, ..., 85.0].
def run_docstring_example():
    x = torch.arange(30.0, device=common.DEVICE).reshape(5, 6)
    out = torch.empty(6, device=x.device)
    simple_column_sum_kernel[(2,)](x, out, 5, 6, 6, 1, BLOCK_M=2, BLOCK_N=4)
    print(f"the docstring's example: {out.tolist()} = {x.sum(0).tolist()}")


# ## Why reduce once: the 1-D way, for comparison
# one_d_column_sum_kernel, below, is what a PyTorch programmer
# might write first: a 1-D acc, and a tl.sum of each tile inside
# the loop. On an H200, for x of 16384 x 8192 float32, it takes
# 0.79 ms; the simple kernel takes 0.50 ms.
# The rule: keep a reduction such as tl.sum out of the loop.
# A warp sends off its loads and goes on until it needs their
# values. But tl.sum makes a program's warps wait for each other,
# so one_d waits at every step, and no warp asks for its part of
# the next tile early. The simple kernel's loop holds only loads
# and adds: a warp done with its adds asks for its next loads
# while the others still add.
# Why tl.sum waits (a detail to skim): `main.py --asm` prints
# Triton's layout of the 16 x 64 tile over 4 warps. A thread
# holds 4 columns of a row, a warp 2 rows, the 4 warps 8, twice
# over: warp w holds rows 2w, 2w + 1, 2w + 8 and 2w + 9. So
# acc += tile needs no other thread, but a column's 16 values
# lie in all 4 warps, which pass values only through shared
# memory (a small fast memory they share) and a barrier,
# bar.sync. --asm counts bar.sync and shfl (a swap inside a
# warp) in each loop: none in the simple kernel's; 3 to 4
# bar.sync and 8 to 12 shfl in one_d's (Triton 3.6 to 3.9).
@triton.jit
def one_d_column_sum_kernel(
    x_ptr, out_ptr, M, N, stride_m, stride_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)  # 1-D
    for i0 in range(0, M, BLOCK_M):
        rows = i0 + tl.arange(0, BLOCK_M)
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        mask = (rows < M)[:, None] & (cols < N)[None, :]
        tile = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        acc += tl.sum(tile.to(tl.float32), axis=0)  # each step
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=cols < N)


column_sums_one_d = functools.partial(column_sums_simple, kernel=one_d_column_sum_kernel)


# ## Part 2. split_column_sum_kernel: two changes
# Parts 2 and 3 make Part 1 fast. The kernel below changes
# Part 1's in two ways, each marked (1) or (2) at its lines.
#
# (1) Split a tall x over more programs. A program runs on
# one SM (streaming multiprocessor), one of an H200's 132 cores.
# For x of 1048576 x 64, the simple kernel starts cdiv(64, 64) = 1
# program, and one SM alone cannot keep enough loads in flight to
# keep memory busy. So the grid gets a second axis. The host
# cuts x's rows into chunks of rows_per_split rows. Program
# (c, s) owns the same BLOCK_N columns as Part 1's program c, but
# adds only chunk s's rows, into row s of a float32 buffer,
# partial. A second pass adds up partial's rows. For M = 12
# in 3 chunks of 4 rows (picture.png, right half):
#
#     partial[0] = x[0:4].sum(0)
#     partial[1] = x[4:8].sum(0)
#     partial[2] = x[8:12].sum(0)
#     out = partial[0] + partial[1] + partial[2]
#
# The second pass is Part 1's simple kernel, with partial
# as its x. It adds the rows in a fixed order, so every call gives
# the same bits. (Atomic adds into out from all programs at once
# would land in a new order on each call, and round differently.)
#
# (2) Load tiles ahead. A load from memory takes hundreds of
# cycles. In Part 1, one warp adds while another waits for its
# load. tl.range(..., num_stages=STAGES) also lets each warp ask
# for the next STAGES - 1 tiles before it adds the current one.
# STAGES = 1 loads none ahead, and 2 loads one.
@triton.jit
def split_column_sum_kernel(
    x_ptr, dest_ptr,  # (1) dest is partial, or out if x is one chunk
    M, N, stride_m, stride_n,
    rows_per_split,  # (1) rows per chunk (at least M if x is one chunk)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    STAGES: tl.constexpr,  # (2) tiles in flight
):  # fmt: skip
    chunk = tl.program_id(1)  # (1) this program's chunk, 0 if x is one chunk
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    row_start = chunk * rows_per_split  # (1) the chunk's rows
    row_stop = tl.minimum(row_start + rows_per_split, M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in tl.range(row_start, row_stop, BLOCK_M, num_stages=STAGES):  # (2)
        rows = i0 + tl.arange(0, BLOCK_M)
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        # (1) The mask uses row_stop, not M, so no two chunks add a row.
        mask = (rows < row_stop)[:, None] & col_mask[None, :]
        tile = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        acc += tile.to(tl.float32)
    sums = tl.sum(acc, axis=0)
    # (1) If x is split, dest_ptr points to partial, a contiguous
    # float32 (splits, N) buffer, and chunk s stores row s, which
    # starts s * N elements in. If not, chunk 0 stores into out.
    tl.store(dest_ptr + chunk * N + cols, sums.to(dest_ptr.dtype.element_ty), mask=col_mask)


# ### Part 2 on the host: chunks, the launch, the second pass
# The host cuts x into chunks of CHUNK_ROWS = 2048 rows: for
# x of 1048576 x 64, 512 chunks, so with BLOCK_N = 64 there are
# 512 programs, about 4 for each of an H200's 132 SMs. An x of at
# most 2048 rows is one chunk, of M rounded up to a power of 2
# rows (rows_per_split; Part 3 explains why it is rounded).
CHUNK_ROWS = 256 if common.INTERPRETED else 2048  # 256 on a CPU, to split a small x


def chunks(M):
    """(splits, rows_per_split) for an x of M rows."""
    rows_per_split = min(CHUNK_ROWS, triton.next_power_of_2(max(M, 1)))
    return triton.cdiv(max(M, 1), rows_per_split), rows_per_split


def column_sums(x, kernel, **tile):
    """x.sum(0) by `kernel`, launched with `tile` or as tuned."""
    M, N = x.shape
    within_limits(x)  # Part 1's two limits; a third comes below
    out = torch.empty(N, dtype=x.dtype, device=x.device)
    splits, rows_per_split = chunks(M)
    # CUDA allows at most 65535 programs along the grid's axis 1.
    assert splits <= 65535, "too many chunks: see any_x.py"
    # The grid is a function of meta, a dict of the launch's
    # constexpr values (from **tile, or picked by Part 3's
    # autotuner), since the number of programs depends on BLOCK_N.
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), splits)  # noqa: E731
    dest = out if splits == 1 else x.new_empty((splits, N), dtype=torch.float32)
    kernel[grid](x, dest, M, N, *x.stride(), rows_per_split, **tile)
    if splits > 1:  # the second pass adds up partial's rows
        sum_partials(dest, out)
    return out


def sum_partials(partial, out, kernel=simple_column_sum_kernel, **more):
    """out[j] = partial[:, j].sum(), in order, by Part 1's kernel."""
    P, N = partial.shape
    # block_m is P rounded up to a power of 2 (at most 256), so
    # few steps cover P. block_n aims at 4096 values, in 16 to 256.
    block_m = min(triton.next_power_of_2(P), 256)
    block_n = max(16, min(256, 4096 // block_m))
    grid = (triton.cdiv(N, block_n),)
    kernel[grid](partial, out, P, N, *partial.stride(), BLOCK_M=block_m, BLOCK_N=block_n, **more)


SPLIT_TILE = dict(BLOCK_M=64, BLOCK_N=64, STAGES=2, num_warps=4)
column_sums_split = functools.partial(column_sums, kernel=split_column_sum_kernel, **SPLIT_TILE)


# ## Part 3. column_sum_kernel: the split kernel, tuned
# The best tile depends on x: a chunk of few rows wants a tile
# of few rows. A triton.Config is one candidate: values for the
# kernel's constexprs, and num_warps. A TILES row is (BLOCK_M,
# BLOCK_N, STAGES, num_warps). Each of these 7 was the fastest
# on some shape (tools/tile_sweep.py timed 32 candidates).
TILES = [(256, 32, 1, 4), (128, 32, 2, 4), (64, 64, 2, 4), (256, 64, 2, 8)]
TILES += [(32, 128, 2, 4), (128, 128, 1, 8), (1, 1024, 1, 8)]  # the last for an x of few rows
if common.INTERPRETED:
    TILES = [(32, 32, 1, 4)]  # one config: a CPU cannot time a GPU
CONFIGS = [triton.Config(dict(BLOCK_M=m, BLOCK_N=n, STAGES=s), num_warps=w) for m, n, s, w in TILES]

# triton.autotune(configs, key) wraps a kernel. Its first launch
# with new values of the key's arguments times every config, and
# keeps the fastest for those values. Our key is N and
# rows_per_split, not M: a model calls with many numbers of rows,
# and each new M would time all 7 configs again. rows_per_split
# takes few values, as the host rounds it up to a power of 2.
# @triton.autotune usually sits above @triton.jit. Here it is
# called as a function, so that Part 2's kernel stays untuned.
tune = triton.autotune(configs=CONFIGS, key=["N", "rows_per_split"])
column_sum_kernel = tune(split_column_sum_kernel)
column_sums_tuned = functools.partial(column_sums, kernel=column_sum_kernel)

# ### What (1), (2) and Part 3 bought
# Times in microseconds (us) on an H200; two runs agreed.
# "split" is Part 2's kernel at SPLIT_TILE (64 x 64, STAGES = 2),
# "(1) only" the same at STAGES = 1. A 64 x 64 tile is 4 times
# Part 1's, so some of the gain from "simple" to "(1) only" is
# the bigger tile, not the split.
#   x of            simple  (1) only  split     tuned  torch
#   1048576x64 f32   27830       131        76     77    164
#   1048576x64 bf16  26160        77        50     50    138
#   16384x8192 f32     502       159       145    133    139
#   16384x8192 bf16    485        94        76     76     82
# At 16384 x 8192 the simple kernel starts 8192 / 64 = 128
# programs, one per SM at most; split's 8 chunks make 1024.
# The times replay recorded launches (a CUDA graph), no Python.
# From a plain Python loop every column took the same, except
# "tuned": up to 134 us a call, as its autotuner runs Python.


# ## Gradients: a torch.autograd.Function
# grad_x[i, j] = grad_out[j] needs no kernel. It is the view
# grad_out.expand(M, N), which repeats grad_out down M rows.
# autograd can differentiate expand, so second derivatives work.
class BlockedSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x_shape = x.shape
        return column_sums(x, column_sum_kernel)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.expand(ctx.x_shape)


VARIANTS = {"simple": column_sums_simple, "one_d": column_sums_one_d}
VARIANTS |= {"split": column_sums_split, "tuned": column_sums_tuned}
# Optional next: any_x.py (Part 4, the kernel op.py runs) and block_ptr.py.


# ## The harness: checks, timing (skip it on a first read)
def within_limits(x):
    """The wrappers' limits, which any_x.py lifts: float32 sums are
    too coarse for float64, and int32 offsets wrap past 2**31."""
    assert x.dtype != torch.float64, "float32 sums: see any_x.py"
    assert common.elements_spanned(x) < 2**31, "int32 offsets: see any_x.py"


def check_variants(x, variants):
    """Runs check() on each variant. Outputs start as NaN."""
    for name, fn in variants.items():
        case = f"{name} on x {tuple(x.shape)} {x.dtype}, strides {x.stride()}"
        with common.uninitialized_memory_is_nan():
            check(fn, x, case)
    return list(variants)


DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32")}
SHAPES = [(16384, 8192), (2048, 65536), (1048576, 64), (64, 1048576)]
SWEEP = [dict(rows=m, cols=n, dtype=t) for t in ("float32", "bfloat16") for m, n in SHAPES]


def benchmark(rows, cols, dtype="float32", module=sys.modules[__name__]):
    """Times torch, module.VARIANTS and a bare column_sum_kernel."""
    x = torch.randn(rows, cols, dtype=DTYPES.get(dtype, dtype), device=common.DEVICE)
    calls = {"torch": functools.partial(x.sum, 0)}
    calls |= {name: functools.partial(fn, x) for name, fn in module.VARIANTS.items()}
    splits, rows_per_split = chunks(rows)
    out = x.new_empty((splits, cols), dtype=x.dtype if splits == 1 else torch.float32)
    grid = lambda meta: (triton.cdiv(cols, meta["BLOCK_N"]), splits)  # noqa: E731
    args = (x, out, rows, cols, *x.stride(), rows_per_split)
    calls["column_sum_kernel[grid] bare"] = lambda: column_sum_kernel[grid](*args)
    case = f"{rows}x{cols} {str(x.dtype).removeprefix('torch.')}"
    nbytes = (rows * cols + cols) * x.element_size()  # x read, out written
    gbps = functools.partial(common.gbps, nbytes)
    return common.timing_rows(case, calls, gbps, "GB/s", common.copy_ceiling_gbps())


def main(argv=None, module=sys.modules[__name__]):
    """Checks and times module.VARIANTS (this file, or one beside)."""
    import tools  # adds --draw and --asm (see the README)

    parser = tools.lesson_parser(module)
    rows, cols = (1000, 96) if common.INTERPRETED else (16384, 8192)
    add = parser.add_argument
    add("--rows", type=int, default=rows, help="M, the rows summed away")
    add("--cols", type=int, default=cols, help="N, the columns kept")
    add("--dtype", choices=list(DTYPES), default="float32", help="of x")
    args = parser.parse_args(argv)
    if args.rows < 0 or args.cols < 0:
        parser.error("--rows and --cols must be >= 0")
    print(common.describe_run())
    run_docstring_example()
    x = torch.randn(args.rows, args.cols, dtype=DTYPES[args.dtype], device=common.DEVICE)
    checked = check_variants(x, module.VARIANTS)
    BlockedSum.apply(x.requires_grad_()).sum().backward()  # grad_x: ones
    assert torch.equal(x.grad, torch.ones_like(x))
    print(f"check passed: {', '.join(checked)} and the gradient match\n")
    common.print_table(benchmark(args.rows, args.cols, args.dtype, module), common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
