"""Weighted sum, y = x @ w over the last dim: forward and backward.

In this lesson you walk x one tile (a 2-D block of x) at a time,
with pointers and masks. You tune the tile, sum over all rows of x
in the same order on every run (Part 1b says why), and hand the
kernels to autograd. x (..., D) is flattened to rows r:

    y[r]         = sum over d of x[r, d] * w[d]     a dot per row
    grad_x[r, d] = grad_y[r] * w[d]                 no sum at all
    grad_w[d]    = sum over r of x[r, d] * grad_y[r]

Words from lessons 01 and 03:
- A program is one running copy of a kernel. kernel[grid](args)
  starts grid[0] programs. In each, tl.program_id(0) is its number.
- A block is a tensor of fixed shape inside one program.
- A stride is the step, in elements, along a dim.
- tl.load(pointers, mask, other) reads memory where mask is True.
  Where mask is False, it reads nothing and gives other instead.

A program owns the ROWS_TILE rows of x listed in the block row_ids.
In PyTorch, as if x were zero-padded to whole tiles, it computes:

    acc = torch.zeros(ROWS_TILE, D_TILE)
    for d0 in range(0, D, D_TILE):
        acc += x[row_ids, d0 : d0 + D_TILE] * w[d0 : d0 + D_TILE]
    y[row_ids] = acc.sum(1)

A worked example. x has shape (5, 6) and is stored row after row,
so the offset of x[r, d], its distance in elements from x[0, 0],
is r * 6 + d. Each program owns ROWS_TILE = 2 rows and walks them
D_TILE = 4 columns at a step, so there are cdiv(5, 2) = 3 programs
(cdiv is division rounded up). Program 1 owns rows 2 and 3. Its
first step loads x at these offsets, which broadcast as in torch:

    row_ids[:, None] * 6 + cols[None, :]      cols: the step's columns
    = [[2], [3]] * 6 + [[0, 1, 2, 3]] = [[12, 13, 14, 15],
                                         [18, 19, 20, 21]]

Its second step takes columns 4 to 7, but x's last column is 5.
Row 2's column 6 would be at offset 2 * 6 + 6 = 18, which holds
x[3, 0], the next row's first value. The mask cols < 6 (with
other=0) loads zeros there instead. Likewise, the mask row_ids < 5
drops program 2's row 5, which x does not have.
"""

import functools
import sys
from pathlib import Path

import torch
from einops import rearrange

# common is the lessons' helper. Without a GPU, it runs Triton on the CPU.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## Part 1. The simplest forward: one program per tile of rows
SIMPLE_TILE = dict(ROWS_TILE=16, D_TILE=64)  # for Parts 1 and 1b


@triton.jit
def simple_forward_kernel(
    x_ptr, w_ptr, y_ptr,  # tensors arrive as pointers, to x[0, 0], w[0] and y[0]
    rows, D, stride_row, stride_col,  # x's sizes and strides
    # tl.constexpr marks a compile-time constant. Block shapes must
    # be constants, and each new value compiles the kernel again.
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    # tl.arange(0, n) is the block 0 to n - 1. n must be a power of 2.
    row_ids = tl.program_id(0) * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    # acc is a tile of float32 sums. 16-bit sums would lose bits.
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=tl.float32)
    for d0 in range(0, D, D_TILE):  # D_TILE columns at each step
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D
        # Broadcasting gives a (ROWS_TILE, D_TILE) block of offsets.
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        mask = row_mask[:, None] & col_mask[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        # w must be contiguous, with w[d] at w_ptr + d (see the Function).
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        acc += x.to(tl.float32) * w.to(tl.float32)[None, :]
    # Why keep a 2-D acc? A program runs on num_warps warps (groups
    # of 32 threads), and each thread holds a few of acc's values.
    # Each thread does acc += ... alone. But tl.sum makes threads
    # exchange values and wait, so the kernel calls it once, here.
    y = tl.sum(acc, axis=1)  # each row's sum, once
    # .dtype.element_ty is the dtype of what y_ptr points to.
    tl.store(y_ptr + row_ids, y.to(y_ptr.dtype.element_ty), mask=row_mask)


def forward_simple(x2d, weight):
    """Returns x2d @ weight for x2d (rows, D), by simple_forward_kernel."""
    rows, D = x2d.shape
    within_limits(x2d)  # the kernel's offsets are int32 numbers, which wrap around past 2**31
    y = torch.empty(rows, dtype=x2d.dtype, device=x2d.device)
    grid = (triton.cdiv(rows, SIMPLE_TILE["ROWS_TILE"]),)  # one program per 16 rows
    args = (x2d, weight, y, rows, D, *x2d.stride())
    simple_forward_kernel[grid](*args, **SIMPLE_TILE, num_warps=4)
    return y


def reference(x, w, grad_y):  # y, grad_x and grad_w, as above
    return x @ w, grad_y[:, None] * w, grad_y @ x


# ## Is it right?
# check() compares got with reference(), run in float64. It allows
# for rounding in our float32 sums, which grows with the number of
# terms: D for y, rows for grad_w, 1 for grad_x (a single product).
def check(got, x, w, grad_y, name):
    """Asserts that got = (y, grad_x, grad_w) matches reference()."""
    terms = (x.shape[1], 1, x.shape[0])
    case = f"on x {tuple(x.shape)} {x.dtype}"
    what = tuple(f"{name} {out} {case}" for out in ("y", "grad_x", "grad_w"))
    common.assert_close_to_float64(got, reference, (x, w, grad_y), terms, what)


# ## Try it: the docstring's example
# main() runs this first. Here x[r, d] = 6r + d and w is all
# ones, so y holds x's row sums, [15.0, 51.0, ..., 159.0]. The
# launch passes rows = 5, D = 6, and x's strides, 6 and 1.
# `main.py --draw picture.png` draws this example from the
# kernel itself, as the picture's left half. The right half
# shows Part 3's backward.
def run_docstring_example():
    x = torch.arange(30.0, device=common.DEVICE).reshape(5, 6)
    y, ones = torch.empty(5, device=x.device), torch.ones(6, device=x.device)
    simple_forward_kernel[(3,)](x, ones, y, 5, 6, 6, 1, ROWS_TILE=2, D_TILE=4)
    print(f"the docstring's example: {y.tolist()} = {x.sum(1).tolist()}")


# ## Part 1b. The simplest backward: a partial row per program
# Each element of grad_x is a single product, so it needs no
# sum. But grad_w[d] sums over every row, and a program sees
# only its own rows. So program p adds up its rows' share into
# row p of partial, a float32 buffer. A second pass, PyTorch's
# partial.sum(0), then adds up the rows of partial:
#
#     partial[p, d] = sum over p's rows r of x[r, d] * grad_y[r]
#     grad_w[d]     = sum over p of partial[p, d]
#
# Why not let every program add into grad_w directly, all at
# once (with atomic adds)? The adds would land in a different
# order on each run, and so round differently. grad_w's bits
# would then change from run to run. The second pass adds
# partial's rows in a fixed order instead.
@triton.jit
def simple_backward_kernel(
    x_ptr, w_ptr, grad_y_ptr,  # grad_y[r] is at grad_y_ptr + r
    grad_x_ptr,  # to grad_x[0, 0]. grad_x is a contiguous (rows, D) tensor.
    partial_ptr,  # a contiguous (programs, D) buffer
    rows, D, stride_row, stride_col,  # as in Part 1
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    p = tl.program_id(0)
    row_ids = p * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0)
    grad_y = grad_y.to(tl.float32)
    partial_row = partial_ptr + p * D  # to partial[p, 0]
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D
        mask = row_mask[:, None] & col_mask[None, :]
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        # grad_x is in float32 until the store rounds it to its dtype.
        grad_x = grad_y[:, None] * w.to(tl.float32)[None, :]
        # grad_x is contiguous, so grad_x[r, d] is at r * D + d.
        out = row_ids[:, None] * D + cols[None, :]
        tl.store(grad_x_ptr + out, grad_x.to(grad_x_ptr.dtype.element_ty), mask=mask)
        # share is this tile's part of grad_w, summed over the
        # program's rows. tl.sum must run at every step here, as
        # each step visits new columns. Part 3 instead walks each
        # program down the rows and sums once, at the end.
        share = tl.sum(x.to(tl.float32) * grad_y[:, None], axis=0)
        tl.store(partial_row + cols, share, mask=col_mask)


def backward_simple(x2d, weight, grad_y):
    """Returns (grad_x, grad_w) of y = x2d @ weight, given grad_y."""
    rows, D = x2d.shape
    within_limits(x2d)  # int32 offsets into x and grad_x, as in Part 1
    programs = triton.cdiv(rows, SIMPLE_TILE["ROWS_TILE"])
    grad_x = torch.empty((rows, D), dtype=x2d.dtype, device=x2d.device)
    partial = torch.empty((programs, D), dtype=torch.float32, device=x2d.device)
    args = (x2d, weight, grad_y, grad_x, partial, rows, D, *x2d.stride())
    simple_backward_kernel[(programs,)](*args, **SIMPLE_TILE, num_warps=4)
    grad_w = partial.sum(0).to(weight.dtype)  # the second pass
    return grad_x, grad_w


# A first read can stop here: Parts 1 and 1b hold the whole idea,
# and exercises.py practises it. Parts 2 and 3 make it fast.
# ## Part 2. forward_kernel: the simple forward, tuned
# Part 2 makes one change to Part 1: it tunes the tile. The
# line that makes the change ends in the comment (tune).
# The best tile depends on D. Wide rows want wide tiles,
# because memory is read fastest in long runs. Narrow rows
# want many rows in a tile. A triton.Config is one candidate
# launch: the values of the tile's constexprs, and num_warps.
# Each TILES entry is (ROWS_TILE, D_TILE, num_warps). We kept
# ten of the many tiles we timed.
TILES = [(128, 32, 4), (64, 64, 4), (8, 128, 4), (16, 128, 4), (32, 128, 4)]
TILES += [(128, 128, 8), (16, 256, 4), (8, 512, 4), (4, 1024, 4), (16, 1024, 8)]
if common.INTERPRETED:
    TILES = [(16, 64, 4)]  # with no GPU to time, one config
CONFIGS = [triton.Config({"ROWS_TILE": r, "D_TILE": d}, num_warps=w) for r, d, w in TILES]

# triton.autotune(configs, key) wraps a kernel. Its first
# launch with a new D times every config and keeps the fastest
# for that D. A launch with the same D but other rows reuses
# that pick. As a decorator, autotune goes above @triton.jit:
#     @triton.autotune(configs=CONFIGS, key=["D"])
# The kernel is Part 1's, unchanged. Only its tile is tuned.
forward_kernel = triton.autotune(configs=CONFIGS, key=["D"])(simple_forward_kernel)  # (tune)


def forward_tuned(x2d, weight):
    """Returns x2d @ weight, by forward_kernel with the tuned tile."""
    rows, D = x2d.shape
    within_limits(x2d)  # int32 offsets, as in Part 1
    y = torch.empty(rows, dtype=x2d.dtype, device=x2d.device)
    # The number of programs depends on the tuned ROWS_TILE. So
    # the grid is a function of meta, the picked config's values.
    grid = lambda meta: (triton.cdiv(rows, meta["ROWS_TILE"]),)  # noqa: E731
    # The autotuner adds the tile and num_warps of its pick.
    forward_kernel[grid](x2d, weight, y, rows, D, *x2d.stride())
    return y


# ## Part 3. backward_kernel: the simple backward, changed
# Part 1b's partial has a row for every 16 rows of x. For x of
# 1048576 x 128 float32, that is 65536 rows (32 MiB). The
# kernel writes them all, and partial.sum(0) reads them again.
# The kernel also runs tl.sum at every step. Part 3 makes two
# changes, and tags the lines that each one touches:
# - (split) gives partial P rows, however many rows x has, with
#   P picked by the host. It also runs tl.sum once per program.
# - (tune) picks the tile from CONFIGS, as forward_kernel does.
#
# (split) changes what a program owns, and so the grid (the
# right half of picture.png draws it, for an x of 10 x 8). A row
# tile is ROWS_TILE rows of x. D tile t is the D_TILE columns
# from t * D_TILE. The grid gains a second axis, of size P:
#              grid axis 0   grid axis 1   a program walks
#   Part 1b    row tile p    (none)        across D
#   Part 3     D tile t      p, 0 to P-1   down row tiles
#                                          p, p + P, p + 2P, ...
# So the P programs of a D tile split its row tiles between
# them, interleaved: a loop with step P hands each its share.
# As a program walks down, it adds x * grad_y into a 2-D acc
# for the same columns at every step. So, as in the forward,
# tl.sum runs once, at the end. In both parts, p is the row of
# partial that a program writes. In PyTorch, with cols the
# columns of D tile t and rows(i) the rows of row tile i:
#     acc = torch.zeros(ROWS_TILE, D_TILE)
#     for i in range(p, row_tiles, P):
#         acc += x[rows(i), cols] * grad_y[rows(i), None]
#     partial[p, cols] = acc.sum(0)
# Take x of 10 x 8, as in picture.png's right half. It has two
# D tiles of 4 columns and 5 row tiles of 2 rows. With P = 2:
#     program (0, 0): columns 0-3, row tiles 0, 2, 4 -> partial[0]
#     program (0, 1): columns 0-3, row tiles 1, 3    -> partial[1]
#     programs (1, 0) and (1, 1): the same for columns 4-7
# The host picks P (next section). For D = 128 on an H200 it
# picks 1056, so partial has 1056 rows, not 65536.


@triton.autotune(configs=CONFIGS, key=["D"])  # (tune)
@triton.jit
def backward_kernel(
    x_ptr, w_ptr, grad_y_ptr, grad_x_ptr, partial_ptr,
    rows, D, stride_row, stride_col,  # all as in Part 1b
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # (tune) picked
):  # fmt: skip
    t, p = tl.program_id(0), tl.program_id(1)  # (split)
    P = tl.num_programs(1)  # (split) grid axis 1's size
    cols = t * D_TILE + tl.arange(0, D_TILE)
    col_mask = cols < D
    # (split) Each program has one D tile, so w loads once.
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=tl.float32)
    for row_tile in range(p, tl.cdiv(rows, ROWS_TILE), P):  # (split)
        row_ids = row_tile * ROWS_TILE + tl.arange(0, ROWS_TILE)
        row_mask = row_ids < rows
        mask = row_mask[:, None] & col_mask[None, :]
        grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0).to(tl.float32)
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        # Load x before storing grad_x, as Part 1b does too. The
        # compiler cannot tell that x and grad_x are different
        # memory, so it keeps their loads and stores in the order
        # written. With the store first, x's load starts later,
        # and we measured the kernel 18% slower.
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        grad_x = grad_y[:, None] * w[None, :]
        # As grad_x is contiguous, its rows lie D apart.
        out = row_ids[:, None] * D + cols[None, :]
        tl.store(grad_x_ptr + out, grad_x.to(grad_x_ptr.dtype.element_ty), mask=mask)
        acc += x.to(tl.float32) * grad_y[:, None]
    # (split) Every program stores its row of partial. If its
    # loop ran over no row tile, that row is zeros. This happens
    # when P exceeds the number of row tiles of a small x. A row
    # left unwritten would hold garbage.
    sums = tl.sum(acc, axis=0)
    tl.store(partial_ptr + p * D + cols, sums, mask=col_mask)


# ### Picking P, on the host (tuning: skim it on a first read)
# A GPU's cores are its SMs (streaming multiprocessors), and
# an H200 has 132. About 8 programs per SM keep the SMs busy,
# because while some programs wait for memory, others compute.
# So the host aims at 8 * SMs programs, P per D tile. At D = 128
# there is one D tile, and P is 1056. The host makes partial,
# with its P rows, before the launch. But the autotuner picks
# D_TILE only during the launch, so the host counts D tiles as
# if D_TILE were 128. The autotuner may pick a wider tile,
# which means fewer D tiles and so fewer programs in all. To
# keep at least one program per SM even then, P is at least
# SMs. P is also at most rows. A wrong count costs speed,
# never correctness. In all:
#     P = min(rows, max(SMs, cdiv(8 * SMs, cdiv(D, 128))))
PROGRAMS_PER_SM, D_TILE_GUESS = 8, 128


def programs_down(rows, D, device):
    """Returns P, the number of programs per D tile (the rule above)."""
    sms = common.sm_count(device) if device.type == "cuda" else 1
    d_tiles = triton.cdiv(D, D_TILE_GUESS)
    P = max(sms, triton.cdiv(PROGRAMS_PER_SM * sms, d_tiles))
    return min(P, rows)  # rows, as ROWS_TILE is not known yet


def backward_tuned(x2d, weight, grad_y):
    """Returns (grad_x, grad_w), by backward_kernel and partial.sum(0)."""
    rows, D = x2d.shape
    within_limits(x2d)  # int32 offsets, as in Part 1b
    P = programs_down(rows, D, x2d.device)
    grad_x = torch.empty((rows, D), dtype=x2d.dtype, device=x2d.device)
    partial = torch.empty((P, D), dtype=torch.float32, device=x2d.device)
    grid = lambda meta: (triton.cdiv(D, meta["D_TILE"]), P)  # noqa: E731
    args = (x2d, weight, grad_y, grad_x, partial, rows, D, *x2d.stride())
    backward_kernel[grid](*args)
    grad_w = partial.sum(0).to(weight.dtype)  # as in Part 1b
    return grad_x, grad_w


# ### What the changes bought
#     H200, x of 1048576 x 128        float32    bfloat16
#     backward_simple (Part 1b)       0.354 ms   0.453 ms
#     backward_tuned (Part 3)         0.279 ms   0.159 ms
#     torch: autograd of x @ w        0.470 ms   0.340 ms
# These times are the kernels' alone, without Python. The
# timing records the launches once, as a CUDA graph, and
# replays that recording. A plain Python loop of calls took
# the same time, within 1%.
# PyTorch's profiler shows where the time goes:
# - partial.sum(0) takes 68 us in backward_simple and 7 us in
#   backward_tuned, since partial has 1056 rows, not 65536.
# - simple_backward_kernel takes 280 us in float32 and moves
#   about 1.1 GB, which is 94% of a plain copy's speed. In
#   bfloat16 it moves half that, yet takes 377 us. So what
#   holds it back is not memory but the work of each step,
#   most likely its tl.sum.
# - backward_kernel, with one tl.sum per program, takes 266 us
#   in float32 and 142 us in bfloat16.


# ## The Function: autograd launches the kernels
# A torch.autograd.Function pairs a forward with its backward. Its
# forward launches Part 2's kernel through forward_tuned, and saves
# x and w. When autograd needs the gradients, its backward launches
# Part 3's. A model calls WeightedSum.apply(x, w).
class WeightedSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        assert x.shape[-1] == weight.shape[0], "x (..., D) needs w of shape (D,)"
        weight = weight.contiguous()  # the kernels read w[d] at w_ptr + d
        ctx.save_for_backward(x, weight)
        # This is x (..., D) as rows. It is a view if x's
        # strides allow one, and a copy otherwise.
        x2d = rearrange(x, "... d -> (...) d")
        y = forward_tuned(x2d, weight)
        return y.reshape(x.shape[:-1])

    # Autograd cannot see into a kernel. So asking it for a second
    # derivative through this backward raises an error.
    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_y):
        x, weight = ctx.saved_tensors
        x2d = rearrange(x, "... d -> (...) d")
        # The kernels read grad_y[r] at grad_y_ptr + r. For a loss
        # y.sum(), autograd hands over grad_y as a single 1 expanded
        # to y's shape (stride 0). So we copy it to a plain tensor.
        grad_y = grad_y.reshape(-1).contiguous()
        grad_x, grad_w = backward_tuned(x2d, weight, grad_y)
        # Return one gradient per input of forward: x's, then w's.
        return grad_x.reshape(x.shape), grad_w


# Next, practise with exercises.py. Then read wide.py, the
# optional Part 4. It holds the kernels that op.py runs, which
# add 16-byte loads, float64, a huge x, fewer compiles, and
# the second pass as a kernel.


# main() checks and times these pairs of wrappers.
VARIANTS = {"simple": (forward_simple, backward_simple), "tuned": (forward_tuned, backward_tuned)}


# ## The harness: checks, timing (skip it on a first read)
def within_limits(x2d):
    """Refuses an x whose offsets, or those of grad_x, reach 2**31.
    grad_x has x's shape and is contiguous. The kernels compute offsets
    in int32, which would wrap to wrong addresses (wide.py lifts this)."""
    assert max(common.elements_spanned(x2d), x2d.numel()) < 2**31, "int32 offsets: see wide.py"


def check_variants(x, variants):
    """Runs check() on each variant, with fresh w and grad_y. Outputs start as NaN."""
    w = torch.randn(x.shape[1], dtype=x.dtype, device=x.device)
    grad_y = torch.randn(x.shape[0], dtype=x.dtype, device=x.device)
    for name, (forward, backward) in variants.items():
        with common.uninitialized_memory_is_nan():
            got = (forward(x, w), *backward(x, w, grad_y))
        check(got, x, w, grad_y, name)
    return list(variants)


DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32")}
SHAPES = [(65536, 1024), (16384, 4096), (65536, 1000), (1048576, 128)]
SWEEP = [dict(rows=r, dim=d, dtype=t) for t in ("float32", "bfloat16") for r, d in SHAPES]


def benchmark(rows, dim, dtype="float32", module=sys.modules[__name__]):
    """Times torch, module.VARIANTS and a bare launch, forward and backward."""
    kw = dict(dtype=DTYPES.get(dtype, dtype), device=common.DEVICE)
    x, w = torch.randn(rows, dim, **kw), torch.randn(dim, **kw)
    grad_y = torch.randn(rows, **kw)
    fwd = {"torch": lambda: x @ w}
    variants, (name, kernel, hints) = module.VARIANTS, module.bare(x)
    fwd |= {name: functools.partial(f, x, w) for name, (f, _) in variants.items()}
    args = (x, w, torch.empty(rows, **kw), rows, dim, *x.stride())
    grid = lambda meta: (triton.cdiv(rows, meta["ROWS_TILE"]),)  # noqa: E731
    fwd[f"{name}[grid] bare"] = lambda: kernel[grid](*args, **hints)
    # Each backward is timed alone: ours through its wrapper, torch's through autograd.
    bwd = {"torch": common.backward_call(torch.matmul, (x, w), grad_y)}
    bwd |= {n: functools.partial(b, x, w, grad_y) for n, (_, b) in variants.items()}
    # Elements moved. Forward: x, w, y. Backward: x, grad_y, w, grad_x, grad_w.
    moved = {"fwd": (rows + 1) * dim + rows, "bwd": 2 * (rows + 1) * dim + rows}
    case = f"{rows}x{dim} {str(x.dtype).removeprefix('torch.')}"
    results, ceiling = [], common.copy_ceiling_gbps()
    for step, calls in (("fwd", fwd), ("bwd", bwd)):
        gbps = functools.partial(common.gbps, moved[step] * x.element_size())
        results += common.timing_rows(case, calls, gbps, "GB/s", ceiling, f" {step}")
    return results


def bare(x):  # returns (name, kernel, hints) for benchmark()'s bare launch
    return "forward_kernel", forward_kernel, {}


def main(argv=None, module=sys.modules[__name__]):
    """Checks and times `module`'s variants (this file's, or wide.py's)."""
    import tools  # adds --draw and --asm (see the README)

    parser = tools.lesson_parser(module)
    rows, dim = (1000, 100) if common.INTERPRETED else (65536, 1024)
    add = parser.add_argument
    add("--rows", type=int, default=rows, help="rows of x")
    add("--dim", type=int, default=dim, help="D, the length of a row")
    add("--dtype", choices=list(DTYPES), default="float32", help="of x and w")
    args = parser.parse_args(argv)
    if min(args.rows, args.dim) < 1:  # an empty x: nothing to tune on
        parser.error("--rows and --dim must be >= 1")
    print(common.describe_run())
    run_docstring_example()
    x = torch.randn(args.rows, args.dim, dtype=DTYPES[args.dtype], device=common.DEVICE)
    checked = check_variants(x, module.VARIANTS)
    print(f"check passed: y, grad_x and grad_w of {', '.join(checked)}")
    # Call the Function as a model does. For y.sum(), grad_x is w.
    x = torch.randn(2, 3, 4, device=common.DEVICE, requires_grad=True)
    w = torch.randn(4, device=common.DEVICE)
    WeightedSum.apply(x, w).sum().backward()
    exact = torch.equal(x.grad, w.expand(2, 3, 4))
    print(f"WeightedSum.apply(x, w).sum().backward(): each row of x.grad == w: {exact}\n")
    rows = benchmark(args.rows, args.dim, args.dtype, module)
    common.print_table(rows, common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
