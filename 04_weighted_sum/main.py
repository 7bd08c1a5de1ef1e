"""Weighted sum, y = x @ w over the last dim: forward and backward.

You learn to walk x a tile (a 2-D block) at a time with pointers
and masks, to tune the tile, to sum over all rows in a fixed order
and to give kernels to autograd. x (..., D) is flattened to rows r:

    y[r]         = sum over d of x[r, d] * w[d]     a dot per row
    grad_x[r, d] = grad_y[r] * w[d]                 no sum at all
    grad_w[d]    = sum over r of x[r, d] * grad_y[r]

One program's work in PyTorch, for its ROWS_TILE rows, row_ids:

    acc = torch.zeros(ROWS_TILE, D_TILE)
    for d0 in range(0, D, D_TILE):
        acc += x[row_ids, d0 : d0 + D_TILE] * w[d0 : d0 + D_TILE]
    y[row_ids] = acc.sum(1)

Lesson 01 defines a program, a block, a stride and num_warps.

Worked example: x of shape (5, 6), stored row after row, so
x[r, d] lies r * 6 + d elements after x[0, 0]. A program owns
ROWS_TILE = 2 rows and walks them D_TILE = 4 columns a step:
cdiv(5, 2) = 3 programs (cdiv: division rounded up). Program 1
owns rows 2 and 3; its first step loads x at these offsets:

    [[2], [3]] * 6 + [[0, 1, 2, 3]] = [[12, 13, 14, 15],
                                       [18, 19, 20, 21]]

Its second step takes columns 4 to 7. Columns 6 and 7 are past
the row's end: offset 2 * 6 + 6 = 18 is x[3, 0], the next row.
The mask cols < 6 turns those loads into zeros; in program 2
(rows 4 and 5) the mask rows < 5 switches off row 5.
`main.py --draw picture.png` draws this, from the kernel itself.
"""

import functools
import math
import sys
from pathlib import Path

import torch
from einops import rearrange

# common (the lessons' helper): with no GPU, it runs Triton on the CPU.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## Part 1. The simplest forward: one program per tile of rows
# A tensor argument arrives as a pointer to its first element.
@triton.jit
def simple_forward_kernel(
    x_ptr, w_ptr, y_ptr,  # point to x[0, 0], w[0] and y[0]
    rows, D, stride_row, stride_col,  # x's sizes, strides
    ROWS_TILE: tl.constexpr,  # rows per program, a power of 2
    D_TILE: tl.constexpr,  # columns per step, a power of 2
):  # fmt: skip
    row_ids = tl.program_id(0) * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    # In int32, Triton's default, row * stride_row wraps past 2^31.
    row_starts = row_ids.to(tl.int64) * stride_row
    # Sum in float32 (float64 for float64 x): 16-bit sums lose bits.
    # A pointer knows its element type (x_ptr.dtype.element_ty); a
    # choice on it, or on a constexpr, is made once, at compile time.
    acc_dtype = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=acc_dtype)
    for d0 in range(0, D, D_TILE):  # a loop that runs on the GPU
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D
        # A (ROWS_TILE, D_TILE) block of offsets (broadcast):
        col_offsets = cols.to(tl.int64) * stride_col
        offsets = row_starts[:, None] + col_offsets[None, :]
        mask = row_mask[:, None] & col_mask[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        # w is contiguous (the Function makes it so): w[d] at w_ptr + d.
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        acc += x.to(acc_dtype) * w.to(acc_dtype)[None, :]
    # Why acc is 2-D, and tl.sum comes once, here: the GPU
    # runs a program on num_warps x 32 threads, and Triton splits a
    # block among them (16 x 64 values on 4 x 32 threads: 8 each).
    # acc += adds each thread's own values. tl.sum makes threads
    # pass values to each other and wait. A 1-D acc, summed at every
    # step, `acc += tl.sum(x * w[None, :], axis=1)`, would wait at
    # every step: 1.3 to 4.3 times slower in lesson 03's timings.
    y = tl.sum(acc, axis=1)
    tl.store(y_ptr + row_ids, y.to(y_ptr.dtype.element_ty), mask=row_mask)


def forward_simple(x2d, weight):
    """x2d @ weight for x2d (rows, D), by simple_forward_kernel."""
    rows, D = x2d.shape
    y = torch.empty(rows, dtype=x2d.dtype, device=x2d.device)
    grid = (triton.cdiv(rows, 16),)  # kernel[grid]: grid[0] programs
    simple_forward_kernel[grid](x2d, weight, y, rows, D, *x2d.stride(), ROWS_TILE=16, D_TILE=64)
    return y


def reference(x, weight):  # what every kernel here computes
    return (x * weight).sum(-1)


def check(x, variants):
    """Test harness (skim it): y, grad_x and grad_w of each variant
    (name -> fn(x, w)) against reference()'s in float64, for random
    w and grad_y, by common.assert_function_close."""
    w = torch.randn(x.shape[-1], dtype=x.dtype, device=x.device)
    grad_y = torch.randn(x.shape[:-1], dtype=x.dtype, device=x.device)
    # How many numbers each sum adds (the rounding allowed grows
    # with it): D for y, 1 for grad_x, rows for grad_w.
    terms = (x.shape[-1], 1, grad_y.numel())
    for name, fn in variants.items():
        case = f"{name} on x {tuple(x.shape)} {x.dtype}, strides {x.stride()}"
        names = ("y", "grad_x", "grad_w")
        common.assert_function_close(fn, (x, w), grad_y, reference, terms, names, case)
    return list(variants)


# ## Part 1b. The simplest backward: a partial row per program
# Each element of grad_x is one product: no sum. grad_w[d] sums
# over every row, but a program sees only its own rows. So program
# p adds up its rows' share into row p of partial, a float32 buffer
# (float64 for float64 x). A second pass, PyTorch's partial.sum(0),
# adds up partial's rows:
#
#     partial[p, d] = sum over p's rows r of x[r, d] * grad_y[r]
#     grad_w[d]     = sum over p of partial[p, d]
#
# Why not add into grad_w from every program at once (an atomic
# add)? The adds would land in a different order on each run, and
# round differently: the bits of grad_w would change run to run.
@triton.jit
def simple_backward_kernel(
    x_ptr, w_ptr, grad_y_ptr,  # as x, w, y in the forward
    grad_x_ptr,  # grad_x[0, 0]; grad_x is a contiguous (rows, D)
    partial_ptr,  # a contiguous (programs, D) buffer
    rows, D, stride_row, stride_col,  # x's, as before
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    p = tl.program_id(0)
    row_ids = p * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    row_starts = row_ids.to(tl.int64) * stride_row
    x_dtype = x_ptr.dtype.element_ty
    acc_dtype = tl.float64 if x_dtype == tl.float64 else tl.float32
    grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0).to(acc_dtype)
    partial_row = partial_ptr + p.to(tl.int64) * D
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D
        mask = row_mask[:, None] & col_mask[None, :]
        col_offsets = cols.to(tl.int64) * stride_col
        offsets = row_starts[:, None] + col_offsets[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        # grad_x in acc_dtype, rounded to x's dtype once, at the store.
        grad_x = grad_y[:, None] * w.to(acc_dtype)[None, :]
        # grad_x is contiguous: its (r, d) lies r * D + d elements in.
        out = row_ids.to(tl.int64)[:, None] * D + cols[None, :]
        tl.store(grad_x_ptr + out, grad_x.to(x_dtype), mask=mask)
        # This tile's share of grad_w, summed over the program's rows.
        # tl.sum must run every step here: each step visits new
        # columns. Part 3 swaps the loops, and sums once, at the end.
        share = tl.sum(x.to(acc_dtype) * grad_y[:, None], axis=0)
        tl.store(partial_row + cols, share, mask=col_mask)


def backward_simple(x2d, weight, grad_y):
    """(grad_x, grad_w) of y = x2d @ weight, given grad_y."""
    rows, D = x2d.shape
    programs = triton.cdiv(rows, 16)  # 16 rows each
    grad_x = torch.empty((rows, D), dtype=x2d.dtype, device=x2d.device)
    sum_dtype = torch.promote_types(x2d.dtype, torch.float32)
    partial = torch.empty((programs, D), dtype=sum_dtype, device=x2d.device)
    simple_backward_kernel[(programs,)](
        x2d, weight, grad_y, grad_x, partial, rows, D, *x2d.stride(),
        ROWS_TILE=16, D_TILE=64,
    )  # fmt: skip
    grad_w = partial.sum(0).to(weight.dtype)  # second pass
    return grad_x, grad_w


# ## The Function: autograd launches the kernels
# forward saves x and w and launches a forward kernel; backward
# launches the backward ones. KERNELS: a style's two wrappers
# ("tuned" joins after Part 4). The op works now; Parts 2 to 4
# make it fast, a second read. op.py makes it an op for models.
KERNELS = {"simple": (forward_simple, backward_simple)}


class WeightedSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, style="simple"):
        assert x.shape[-1] == weight.shape[0], "x (..., D) needs w of shape (D,)"
        weight = weight.contiguous()  # the kernels read w_ptr + d
        ctx.save_for_backward(x, weight)
        ctx.style = style
        # x (..., D) as rows: a view where it can be (einops).
        x2d = rearrange(x, "... d -> (...) d")
        y = KERNELS[style][0](x2d, weight)
        return y.reshape(x.shape[:-1])

    @staticmethod
    # Autograd cannot see inside a kernel, so it cannot take a second
    # derivative through this backward: asking for one raises.
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_y):
        x, weight = ctx.saved_tensors
        x2d = rearrange(x, "... d -> (...) d")
        # The kernels read grad_y[r] at grad_y_ptr + r; y.sum() hands
        # back one value, expanded (stride 0), so make it contiguous.
        grad_y = grad_y.reshape(-1).contiguous()
        grad_x, grad_w = KERNELS[ctx.style][1](x2d, weight, grad_y)
        return grad_x.reshape(x.shape), grad_w, None


# ## Part 2. forward_kernel: the simple kernel, two changes
# (tune) the autotuner picks the tile; (wide) wide loads, told in
# Part 4: on a first read skip the (wide) lines; nothing changes.
# (tune) The best tile depends on D: wide rows want wide tiles (long
# reads), narrow rows want many rows a tile. A triton.Config is one
# candidate (constexprs, and num_warps).
#     @triton.autotune(configs=CONFIGS, key=["D"])
# times every config at the first call with a new D, and keeps the
# fastest; a new number of rows reuses it. A TILES row is
# (ROWS_TILE, D_TILE, num_warps): nine, chosen by measuring.
TILES = [(128, 32, 4), (64, 64, 4), (8, 128, 4), (32, 128, 4)]
TILES += [(128, 128, 8), (16, 256, 4), (8, 512, 4), (4, 1024, 4), (16, 1024, 8)]
if common.INTERPRETED:
    TILES = [(16, 64, 4)]  # no GPU to time: one config
CONFIGS = [triton.Config({"ROWS_TILE": r, "D_TILE": d}, num_warps=w) for r, d, w in TILES]


def tiles_for_d(configs, named_args, **kwargs):
    """Called by the autotuner before it times: the configs whose
    D_TILE suits D (much wider: mostly masked loads; much narrower:
    many steps). D = 1000 keeps D_TILE 128 to 1024."""
    width = triton.next_power_of_2(named_args["D"])
    fit = [c for c in configs if min(width, 128) <= c.kwargs["D_TILE"] <= max(width, 32)]
    return fit or configs


# TUNING makes tuning cheap. tiles_for_d drops configs first. Each
# config is timed briefly: warmup=5 and rep=20 ms, against Triton's
# 25 and 100. cache_results keeps the winner on disk for next time.
TUNING = dict(prune_configs_by={"early_config_prune": tiles_for_d}, cache_results=True)
TUNING["do_bench"] = functools.partial(triton.testing.do_bench, warmup=5, rep=20)


@triton.autotune(configs=CONFIGS, key=["D"], **TUNING)  # (tune)
# Triton compiles a separate version of a kernel for an int
# argument that is 1 or divisible by 16 (it "specializes"). rows
# changes with every batch: do_not_specialize keeps one version.
@triton.jit(do_not_specialize=["rows"])
def forward_kernel(
    x_ptr, w_ptr, y_ptr, rows, D, stride_row, stride_col,
    X_ROW_ALIGN: tl.constexpr,  # (wide) a power of 2 dividing stride_row
    D_ALIGN: tl.constexpr,  # (wide) a power of 2 dividing D
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # (tune)
):  # fmt: skip
    row_ids = tl.program_id(0) * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    # (wide) The same two values, written so that the compiler sees
    # they divide by X_ROW_ALIGN and D_ALIGN (Part 4).
    stride_row = (stride_row // X_ROW_ALIGN) * X_ROW_ALIGN
    D_aligned = (D // D_ALIGN) * D_ALIGN
    row_starts = row_ids.to(tl.int64) * stride_row
    acc_dtype = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=acc_dtype)
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D_aligned  # (wide) cols < D, as before
        col_offsets = cols.to(tl.int64) * stride_col
        offsets = row_starts[:, None] + col_offsets[None, :]
        mask = row_mask[:, None] & col_mask[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        acc += x.to(acc_dtype) * w.to(acc_dtype)[None, :]
    y = tl.sum(acc, axis=1)
    tl.store(y_ptr + row_ids, y.to(y_ptr.dtype.element_ty), mask=row_mask)


def forward_tuned(x2d, weight):
    """x2d @ weight by forward_kernel, with the tuned tile."""
    rows, D = x2d.shape
    y = torch.empty(rows, dtype=x2d.dtype, device=x2d.device)
    # Programs depend on the tuned ROWS_TILE: grid gets the config.
    grid = lambda meta: (triton.cdiv(rows, meta["ROWS_TILE"]),)  # noqa: E731
    forward_kernel[grid](x2d, weight, y, rows, D, *x2d.stride(), **alignment(x2d))
    return y


# ## Part 3. backward_kernel: the simple backward, changed
# (split) The loops swap: a program owns one D tile (a block of
# columns) and walks down the rows, every P-th row tile, keeping a
# 2-D acc of x * grad_y as the forward does. Program (t, p), in
# PyTorch (cols: D tile t; rows(i): row tile i's rows):
#     for i in range(p, row_tiles, P):
#         acc += x[rows(i), cols] * grad_y[rows(i), None]
#     partial[p, cols] = acc.sum(0)
# (tune) and (wide) mark what it takes from forward_kernel (it
# tunes a tile of its own); (sum) marks the second pass, a kernel.
# (split) partial has P rows, where the simple backward's had one
# per 16 rows of x (for x of 1048576 x 128, partial had 65536 rows,
# 32 MB). For D = 8 in two D tiles of 4 columns, 5 row tiles, P = 2:
#     program (0, 0): columns 0-3, row tiles 0, 2, 4 -> partial[0]
#     program (0, 1): columns 0-3, row tiles 1, 3    -> partial[1]
#     programs (1, 0) and (1, 1): the same for columns 4-7
# Picking P, on the host. partial's P rows are allocated before
# the launch, and the autotuner picks D_TILE only at the launch:
# so P counts D tiles of D_TILE_GUESS = 128 columns. D tiles x P
# programs, about 8 per SM (streaming multiprocessor, a GPU core),
# keep every SM busy; at least one per SM, at most one per row of
# x. On an H100 (132 SMs), D = 128 gives P = 1056. In all:
#     P = min(rows, max(SMs, cdiv(8 x SMs, D tiles)))
PROGRAMS_PER_SM, D_TILE_GUESS = 8, 128


@triton.autotune(configs=CONFIGS, key=["D"], **TUNING)  # (tune)
@triton.jit(do_not_specialize=["rows"])
def backward_kernel(
    x_ptr, w_ptr, grad_y_ptr, grad_x_ptr, partial_ptr,
    rows, D, stride_row, stride_col,  # all as before
    X_ROW_ALIGN: tl.constexpr, D_ALIGN: tl.constexpr,  # (wide)
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # (tune)
):  # fmt: skip
    x_dtype = x_ptr.dtype.element_ty
    acc_dtype = tl.float64 if x_dtype == tl.float64 else tl.float32
    t, p = tl.program_id(0), tl.program_id(1)  # (split)
    P = tl.num_programs(1)  # (split) grid axis 1's size
    cols = t * D_TILE + tl.arange(0, D_TILE)
    D_aligned = (D // D_ALIGN) * D_ALIGN  # (wide) as in forward_kernel
    col_mask = cols < D_aligned  # (wide)
    stride_row = (stride_row // X_ROW_ALIGN) * X_ROW_ALIGN  # (wide)
    col_offsets = cols.to(tl.int64) * stride_col
    # (split) One D tile per program: w is loaded once, not per step.
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(acc_dtype)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=acc_dtype)
    for tile in range(p, tl.cdiv(rows, ROWS_TILE), P):  # (split)
        row_ids = (tile * ROWS_TILE + tl.arange(0, ROWS_TILE)).to(tl.int64)
        row_mask = row_ids < rows
        mask = row_mask[:, None] & col_mask[None, :]
        grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0).to(acc_dtype)
        offsets = (row_ids * stride_row)[:, None] + col_offsets[None, :]
        # Load x before storing grad_x: the compiler cannot prove
        # that the two never overlap in memory, so a load after the
        # store would wait for it (18% slower, measured).
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        grad_x = grad_y[:, None] * w[None, :]
        # (wide) grad_x's rows lie D apart. Written as D_aligned, the
        # compiler sees it divide by D_ALIGN: wide stores too.
        out = (row_ids * D_aligned)[:, None] + cols[None, :]
        tl.store(grad_x_ptr + out, grad_x.to(x_dtype), mask=mask)
        acc += x.to(acc_dtype) * grad_y[:, None]
    # (split) P can exceed the row tiles (ROWS_TILE is tuned after P):
    # a program with no tile stores zeros; every partial row is set.
    sums = tl.sum(acc, axis=0)
    tl.store(partial_ptr + p.to(tl.int64) * D + cols, sums, mask=col_mask)


# (sum) The second pass as a kernel: one launch that writes w's
# dtype, where PyTorch's sum and then a cast take two launches and
# 4 to 6 us more GPU time; its order is fixed, like PyTorch's.
@triton.jit
def sum_partials_kernel(
    partial_ptr, grad_w_ptr, P, D,  # partial: a contiguous (P, D)
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * D_TILE + tl.arange(0, D_TILE)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=partial_ptr.dtype.element_ty)
    for p0 in range(0, P, ROWS_TILE):  # rows of partial, in order
        p = p0 + tl.arange(0, ROWS_TILE)
        mask = (p < P)[:, None] & (cols < D)[None, :]
        offsets = p.to(tl.int64)[:, None] * D + cols[None, :]
        acc += tl.load(partial_ptr + offsets, mask=mask, other=0.0)
    sums = tl.sum(acc, axis=0).to(grad_w_ptr.dtype.element_ty)
    tl.store(grad_w_ptr + cols, sums, mask=cols < D)


def backward_tuned(x2d, weight, grad_y):
    """(grad_x, grad_w) by backward_kernel, then sum_partials_kernel."""
    rows, D = x2d.shape
    sms = torch.cuda.get_device_properties(x2d.device).multi_processor_count if x2d.is_cuda else 1
    d_tiles = triton.cdiv(D, D_TILE_GUESS)
    P = max(sms, triton.cdiv(PROGRAMS_PER_SM * sms, d_tiles))
    P = min(P, rows)  # (split) at most a program per row
    grad_x = torch.empty((rows, D), dtype=x2d.dtype, device=x2d.device)
    sum_dtype = torch.promote_types(x2d.dtype, torch.float32)
    partial = torch.empty((P, D), dtype=sum_dtype, device=x2d.device)
    grid = lambda meta: (triton.cdiv(D, meta["D_TILE"]), P)  # noqa: E731
    backward_kernel[grid](
        x2d, weight, grad_y, grad_x, partial, rows, D, *x2d.stride(), **alignment(x2d)
    )
    grad_w = torch.empty_like(weight)
    rows_tile = min(triton.next_power_of_2(P), 1024)  # tall: few steps
    d_tile = max(16, 4096 // rows_tile)  # at least 16 columns
    grid = (triton.cdiv(D, d_tile),)
    sum_partials_kernel[grid](partial, grad_w, P, D, ROWS_TILE=rows_tile, D_TILE=d_tile)
    return grad_x, grad_w


# ## Part 4 (optional). Wide loads: the lines marked (wide)
# A thread can load 16 bytes (4 float32, 8 float16) with one
# instruction, a wide load, instead of one instruction an element.
# The compiler emits one only where it can prove, for each group
# of 4 float32 columns that a thread loads, that
# - the 4 are next to each other in memory: stride_col is 1;
# - the first sits on a 16-byte boundary in every row: x's start
#   and stride_row are multiples of 16 bytes;
# - the mask is the same for all 4, as one instruction loads all
#   or none: D is a multiple of 4.
# At a launch, Triton tells the compiler a few facts about the
# arguments (an int is 1, or divides by 16; a pointer is on a
# 16-byte boundary), and compiles a version for each set of facts:
# it "specializes". That covers stride_col and x's start. But
# D = 1000 divides by 4, not 16: no fact. So alignment() passes
# D_ALIGN = 4 (8 for 16-bit x) as a constexpr, and the kernel
# masks with D_aligned = (D // D_ALIGN) * D_ALIGN: still 1000,
# but now visibly divisible by 4. X_ROW_ALIGN does the same for
# stride_row. `main.py --asm` counts load instructions in the PTX
# (GPU assembly) of forward_kernel, D = 1000, 128 x 32 tiles: each
# of 128 threads loads 32 values of x (8 wide loads, or 32 scalar
# ones) and one of w:
#     X_ROW_ALIGN = D_ALIGN = 1:  0 wide loads, 33 scalar ones
#     X_ROW_ALIGN = D_ALIGN = 4:  9 wide loads, 0 scalar ones


def alignment(x2d):
    """The largest powers of 2, up to 16 bytes' worth of elements,
    that divide x2d's row stride and D."""
    vector = 16 // x2d.element_size()  # elements in 16 bytes
    return dict(X_ROW_ALIGN=math.gcd(x2d.stride(0), vector), D_ALIGN=math.gcd(x2d.shape[1], vector))


KERNELS["tuned"] = (forward_tuned, backward_tuned)  # for the Function
# s=s binds each style now (a lambda reads s when it is called).
VARIANTS = {s: lambda x, w, s=s: WeightedSum.apply(x, w, s) for s in KERNELS}


# ## Timing (the harness: skip it on a first read)
DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32", "float64")}
SHAPES = [(65536, 1024), (16384, 4096), (65536, 1000), (1048576, 128)]
SWEEP = [dict(rows=r, dim=d, dtype=t) for t in ("float32", "bfloat16") for r, d in SHAPES]


def benchmark(rows, dim, dtype="float32"):
    """Time forwards ("fwd"), backwards alone ("bwd"), a bare launch."""
    kw = dict(dtype=DTYPES.get(dtype, dtype), device=common.DEVICE)
    x, w = torch.randn(rows, dim, **kw), torch.randn(dim, **kw)
    grad_y = torch.randn(rows, **kw)
    fwd = {"torch": lambda: x @ w}
    fwd |= {name: functools.partial(fn, x, w) for name, fn in VARIANTS.items()}
    args = (x, w, torch.empty(rows, **kw), rows, dim, *x.stride())
    grid = lambda meta: (triton.cdiv(rows, meta["ROWS_TILE"]),)  # noqa: E731
    fwd["forward_kernel[grid] bare"] = lambda: forward_kernel[grid](*args, **alignment(x))
    bwd = {"torch": torch.matmul, **VARIANTS}  # each timed backward alone
    # Elements moved: x, w, y; then x, grad_y, w, grad_x, grad_w.
    moved = {"fwd": (rows + 1) * dim + rows, "bwd": 2 * (rows + 1) * dim + rows}
    case = f"{rows}x{dim} {str(x.dtype).removeprefix('torch.')}"
    ceiling, results = common.copy_ceiling_gbps(), []
    timed = {
        "fwd": {name: common.measure(call) for name, call in fwd.items()},
        "bwd": {n: common.measure_backward(f, (x, w), grad_y) for n, f in bwd.items()},
    }
    for step, times in timed.items():
        for name, t in times.items():
            gbps = common.gbps(moved[step] * x.element_size(), t[0])
            row = (case, f"{name} {step}", t, times["torch"], gbps, "GB/s", ceiling)
            results.append(common.timing_row(*row))
    return results


def main(argv=None):
    import tools  # adds --draw and --asm (see the README)

    parser = tools.lesson_parser(sys.modules[__name__])
    rows, dim = (1000, 100) if common.INTERPRETED else (65536, 1024)
    add = parser.add_argument
    add("--rows", type=int, default=rows, help="rows of x")
    add("--dim", type=int, default=dim, help="D, the length of a row")
    add("--dtype", choices=list(DTYPES), default="float32", help="of x and w")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.dim < 0:  # no rows: nothing to tune on
        parser.error("--rows must be >= 1 and --dim >= 0")
    print(common.describe_run())
    x = torch.arange(30.0, device=common.DEVICE).reshape(5, 6)
    y, ones = torch.empty(5, device=x.device), torch.ones(6, device=x.device)
    simple_forward_kernel[(3,)](x, ones, y, 5, 6, 6, 1, ROWS_TILE=2, D_TILE=4)
    print(f"the docstring's example: {y.tolist()} = {x.sum(1).tolist()}")
    x = torch.randn(args.rows, args.dim, dtype=DTYPES[args.dtype], device=common.DEVICE)
    checked = check(x, VARIANTS)
    print(f"check passed: y, grad_x and grad_w of {', '.join(checked)}\n")
    rows = benchmark(args.rows, args.dim, args.dtype)
    common.print_table(rows, common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
