"""Weighted sum y = x @ w over the last dimension: forward and backward kernels in Triton.

You learn to walk x a tile at a time (a tile: the 2-D block of x a program loads) with pointers and
masks, to tune the tile, to sum over all rows in a fixed order, and to join kernels to autograd and
torch.compile. With x (..., D) flattened to rows r, and w (D,):

    y[r]         = sum_d x[r, d] * w[d]          one dot product per row
    grad_x[r, d] = grad_y[r] * w[d]              an outer product: nothing to add up
    grad_w[d]    = sum_r x[r, d] * grad_y[r]     a sum over every row of x

A worked example. A Triton kernel runs many times in parallel, as many times as its launch grid
says. Each run is a program, and tl.program_id(0) tells it its number. A program is run by a group
of GPU threads together, but you write it for whole blocks of values and never index a thread. Take
x of shape (5, 6), stored row after row, so x[r, d] lies r * 6 + d elements after x[0, 0]. Give each
program 2 rows, walked 4 columns at a time: cdiv(5, 2) = 3 programs (cdiv: division rounded up).
Program 1 owns rows 2 and 3. Its first step reads offsets row * 6 + column (broadcast as in torch):

    [[2], [3]] * 6 + [[0, 1, 2, 3]] = [[12, 13, 14, 15],
                                       [18, 19, 20, 21]]

Its second step takes columns 4 to 7, offsets [[16, 17, 18, 19], [22, 23, 24, 25]]. Columns 6 and 7
are not in the row: offsets 18, 19 and 24, 25 hold x[3, 0:2] and x[4, 0:2]. A mask, column < 6,
switches those loads off: [[16, 17, -, -], [22, 23, -, -]]. In program 2, rows 4 and 5, the mask
row < 5 switches off row 5, past the end of x. Each program adds its products into a 2 x 4
accumulator and sums each of its rows into y[r] only after the loop: a sum across a block makes
threads swap values. `main.py --draw picture.png` draws this example.
"""

import functools
import math
import sys
from pathlib import Path

import torch
from einops import rearrange

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # so that `import common` finds the repository's common/
import common  # noqa: E402  (before any kernel: without CUDA it switches on Triton's interpreter)
import tools  # noqa: E402  (main's --draw and --asm)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32", "float64")}


# ## The simplest kernel: one program per tile of rows, a loop over the columns
# @triton.jit compiles the function for the GPU. A tensor argument arrives as a pointer to its
# first element (ptr.dtype.element_ty is its dtype). A pointer plus a block of offsets is a block
# of pointers, and tl.load of it returns a block of values of the same shape (tl.store writes one).
@triton.jit
def simple_forward_kernel(
    x_ptr,  # pointer to x[0, 0]; x has shape (rows, D), any strides
    w_ptr,  # pointer to w[0]; w is contiguous
    y_ptr,  # pointer to y[0]; y is contiguous, one value per row
    rows, D, stride_row, stride_col,  # x is (rows, D); elements to its next row, next column
    ROWS_TILE: tl.constexpr,  # rows per program
    D_TILE: tl.constexpr,  # columns per step
):  # fmt: skip
    # tl.arange(0, ROWS_TILE) is a block, a small tensor inside the program, like torch.arange.
    # Arithmetic on blocks is elementwise and broadcasts as in torch. Each dim of a block is a power
    # of two fixed at compile time (ROWS_TILE is a tl.constexpr); a tile is a block loaded from x.
    row_ids = tl.program_id(0) * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    row_starts = row_ids.to(tl.int64) * stride_row  # int64: row * stride can pass 2^31
    # A choice on a dtype or constexpr (`a if c else b` below) is made at compile time, once.
    # Multiply and add in float32 (float64 for float64 x): float16 or bfloat16 sums lose low bits.
    acc_dtype = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=acc_dtype)
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D
        # A (ROWS_TILE, D_TILE) block of offsets, in int64 as row_starts: x may be a transposed
        # view, whose stride_col is large, so d * stride_col can pass 2^31 too.
        offsets = row_starts[:, None] + cols[None, :].to(tl.int64) * stride_col
        # Masked-off elements load nothing and take `other`: 0 adds nothing to the sum.
        x = tl.load(x_ptr + offsets, mask=row_mask[:, None] & col_mask[None, :], other=0.0)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        acc += x.to(acc_dtype) * w.to(acc_dtype)[None, :]
    tl.store(y_ptr + row_ids, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), mask=row_mask)


def forward_simple(x2d, weight, y):
    """y[r] = sum_d x2d[r, d] * weight[d], for x2d of shape (rows, D), written into y."""
    rows, D = x2d.shape
    grid = (triton.cdiv(rows, 16),)  # how many programs: one per 16 rows
    # kernel[grid](...) launches grid[0] programs; constexprs (ROWS_TILE, D_TILE) go by keyword.
    simple_forward_kernel[grid](x2d, weight, y, rows, D, *x2d.stride(), ROWS_TILE=16, D_TILE=64)


def reference(x, weight):  # the plain PyTorch expression
    return (x * weight).sum(-1)


def exact(x, weight, grad_y):  # y, grad_x and grad_w of reference(), by autograd in float64
    x, weight = x.detach().double().requires_grad_(), weight.detach().double().requires_grad_()
    y = reference(x, weight)
    return (y.detach(), *torch.autograd.grad(y, (x, weight), grad_y.double()))


def check(x, variants):
    """Checks each of `variants` (name -> differentiable fn(x, w), such as VARIANTS below) on x, a
    random w and grad_y: y, grad_x and grad_w against exact(); returns their names."""
    weight = torch.randn(x.shape[-1], dtype=x.dtype, device=x.device)
    grad_y = torch.randn(x.shape[:-1], dtype=x.dtype, device=x.device)
    # The rounding allowed grows with the same sums over |x|, |w|, |grad_y| and with their lengths.
    want, magnitude = exact(x, weight, grad_y), exact(x.abs(), weight.abs(), grad_y.abs())
    lengths = (x.shape[-1], 1, grad_y.numel())
    for name, fn in variants.items():
        x_in, w_in = x.detach().requires_grad_(), weight.detach().requires_grad_()
        with common.uninitialized_memory_is_nan():  # so an element never written fails
            y = fn(x_in, w_in)
            got = (y, *torch.autograd.grad(y, (x_in, w_in), grad_y))
        for what, value, *bounds in zip(("y", "grad_x", "grad_w"), got, want, magnitude, lengths):
            case = f"{name} {what} on x {tuple(x.shape)} {x.dtype}, strides {x.stride()}"
            if value.dtype != x.dtype:
                raise AssertionError(f"{case}: dtype {value.dtype}, expected {x.dtype}")
            common.assert_close(value, *bounds, case)
    return list(variants)


# ## Faster, step 1: let the autotuner choose the tile
# forward_simple fixes the tile at 16 rows x 64 columns. The fastest tile depends on D: wide rows
# want wide tiles (long reads), narrow rows want many rows per tile. So:
# - a triton.Config holds one candidate from TILES (ROWS_TILE, D_TILE, num_warps), seven chosen by
#   measuring, two for a narrow D (NOTES item 41); num_warps: the program's warps of 32 threads;
# - @triton.autotune(configs=CONFIGS, key=["D"]), on forward_kernel below (the simple kernel plus
#   three lines marked "step 2"), times the configs at the first call with a new D: the fastest
#   stays.
TILES = [(128, 32, 4), (64, 64, 4), (8, 128, 4), (32, 128, 4), (128, 128, 8), (16, 256, 4)]
TILES += [(8, 512, 4), (4, 1024, 4), (16, 1024, 8)]
if common.INTERPRETED:
    TILES = [(16, 64, 4)]  # the interpreter's timings say nothing about a GPU: one config
CONFIGS = [triton.Config({"ROWS_TILE": r, "D_TILE": d}, num_warps=w) for r, d, w in TILES]


# CHEAP_TUNING keeps the tuning cheap (skip on a first read): tiles_for_d drops the tiles far from
# D's width before any timing; do_bench times each config briefly (5 ms of warm-up, 20 of timing;
# Triton's defaults: 25, 100); cache_results=True saves the choice on disk for the next run.
def tiles_for_d(configs, named_args, **kwargs):
    """Configs worth timing: D tiles from min(W, 128) to max(W, 32), W = next_power_of_2(D)."""
    width = triton.next_power_of_2(named_args["D"])
    fit = [c for c in configs if min(width, 128) <= c.kwargs["D_TILE"] <= max(width, 32)]
    return fit or configs


CHEAP_TUNING = dict(prune_configs_by={"early_config_prune": tiles_for_d}, cache_results=True)
CHEAP_TUNING["do_bench"] = functools.partial(triton.testing.do_bench, warmup=5, rep=20)


# ## Faster, step 2 (speed only): wide loads, from a bound the compiler can see divides by 4
# A thread can load 16 bytes (4 float32, 8 float16) with one instruction, a wide load, instead of
# one instruction per element. In float32 the compiler emits one only where it can prove, for each
# group of 4 columns, that
# - they are next to each other: stride_col is 1;
# - the first starts on a 16-byte boundary: x's start, and every row start, row * stride_row;
# - the mask cols < D is the same for all 4. With D = 1002, columns 1000 to 1003 would be half in,
#   half out; only a D that is a multiple of 4 rules that out.
# The compiler knows only what the arguments show: Triton compiles a version of the kernel for
# each set of facts it sees in them (it "specializes"), such as a pointer 16-byte aligned, an int
# equal to 1 or divisible by 16. D = 1000 is a multiple of 4, not of 16: the kernel learns nothing.
# So alignment() passes D_ALIGN = 4 (8 for 16-bit x; a constexpr), and the kernel masks with
# D_aligned = (D // D_ALIGN) * D_ALIGN: still 1000, but visibly a multiple of 4. X_ROW_ALIGN does
# the same for the row starts. `main.py --asm` on a CPU compiles forward_kernel at D = 1000 both
# ways, for 128 x 32 tiles, and counts lines of PTX, the GPU's assembly:
#     X_ROW_ALIGN = D_ALIGN = 1:  0 wide loads (ld.global.v4.b32), 33 scalar ones (ld.global.b32)
#     X_ROW_ALIGN = D_ALIGN = 4:  9 wide loads, 0 scalar ones
@triton.autotune(configs=CONFIGS, key=["D"], **CHEAP_TUNING)  # step 1
@triton.jit(do_not_specialize=["rows"])  # rows only bounds a mask: no versions for its facts
def forward_kernel(
    x_ptr, w_ptr, y_ptr, rows, D, stride_row, stride_col,  # as in simple_forward_kernel
    X_ROW_ALIGN: tl.constexpr,  # a power of two that divides stride_row
    D_ALIGN: tl.constexpr,  # a power of two that divides D
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # as there; the autotuner sets them
):  # fmt: skip
    row_ids = tl.program_id(0) * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    row_starts = row_ids.to(tl.int64) * ((stride_row // X_ROW_ALIGN) * X_ROW_ALIGN)  # step 2
    D_aligned = (D // D_ALIGN) * D_ALIGN  # step 2: equal to D, visibly divided by D_ALIGN
    acc_dtype = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32  # as there
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=acc_dtype)
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D_aligned  # step 2: the same for each D_ALIGN columns in a row
        offsets = row_starts[:, None] + cols[None, :].to(tl.int64) * stride_col
        x = tl.load(x_ptr + offsets, mask=row_mask[:, None] & col_mask[None, :], other=0.0)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        acc += x.to(acc_dtype) * w.to(acc_dtype)[None, :]
    tl.store(y_ptr + row_ids, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), mask=row_mask)


def alignment(x2d):  # the largest powers of two, up to 16 bytes, dividing the row stride and D
    vector = 16 // x2d.element_size()  # elements in 16 bytes
    return dict(X_ROW_ALIGN=math.gcd(x2d.stride(0), vector), D_ALIGN=math.gcd(x2d.shape[1], vector))


def forward_pointer(x2d, weight, y):
    rows, D = x2d.shape
    # The number of programs depends on ROWS_TILE, which the autotuner picks, so grid is a
    # function: Triton calls it with the chosen config's values (meta, a dict) before it launches.
    grid = lambda meta: (triton.cdiv(rows, meta["ROWS_TILE"]),)  # noqa: E731
    forward_kernel[grid](x2d, weight, y, rows, D, x2d.stride(0), x2d.stride(1), **alignment(x2d))


FORWARDS = {"simple": forward_simple, "pointer": forward_pointer}  # style -> its launcher


# ## The backward pass
# Each element of grad_x = grad_y (outer) w is one product: no sum. grad_w[d] sums over every
# row, and many programs share the rows. Atomic adds into grad_w would round differently each run
# (their order varies), and add again each time the autotuner runs the kernel to time it. Instead:
# - the grid is 2-D, (D tiles, P): program (t, p) takes D tile t and row tiles p, p + P, ...;
# - for each row tile it writes that tile of grad_x and adds x * grad_y into its accumulator;
# - at the end it writes the accumulator's column sums into row p of partial, a (P, D) buffer;
# - sum_partials_kernel adds up each column of partial in a fixed order: the same bits each call.
# For D = 8 in two D tiles of 4 columns, 5 row tiles and P = 2:
#     program (0, 0): columns 0-3, row tiles 0, 2, 4 -> partial[0, 0:4]
#     program (0, 1): columns 0-3, row tiles 1, 3    -> partial[1, 0:4]
#     programs (1, 0) and (1, 1): the same for columns 4-7 -> partial[0, 4:8] and partial[1, 4:8]
# How many programs share the rows, P: the grid has cdiv(D, D_TILE) x P programs, and about 8 per
# SM (streaming multiprocessor, one of the GPU's cores) keep every SM busy. P is set before the
# autotuner picks D_TILE, so it counts D tiles as 128 wide: P = 8 x SMs / cdiv(D, 128), but never
# fewer than the SMs (the rule measured best: results/NOTES.md items 11 and 26).
PROGRAMS_PER_SM = 8


@triton.autotune(configs=CONFIGS, key=["D"], **CHEAP_TUNING)
@triton.jit(do_not_specialize=["rows"])
def backward_kernel(
    x_ptr, w_ptr, grad_y_ptr,  # x (rows, D) of any strides; w and grad_y as w and y in forward
    grad_x_ptr,  # grad_x[0, 0]; grad_x is a contiguous (rows, D)
    partial_ptr,  # partial[0, 0]; a contiguous (P, D), P = tl.num_programs(1): grid axis 1's size
    rows, D, stride_row, stride_col,  # as in forward_kernel
    stride_grad_y,  # grad_y[r] to grad_y[r + 1]; 0 for y.sum(), whose grad_y is one value expanded
    X_ROW_ALIGN: tl.constexpr, D_ALIGN: tl.constexpr,  # as in forward_kernel
    NEED_GRAD_X: tl.constexpr, NEED_GRAD_W: tl.constexpr,  # which gradients autograd asks for
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # as there
):  # fmt: skip
    acc_dtype = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32  # as there
    d0, p = tl.program_id(0) * D_TILE, tl.program_id(1)
    D_aligned = (D // D_ALIGN) * D_ALIGN  # D, as in forward_kernel
    cols = d0 + tl.arange(0, D_TILE)
    col_mask = cols < D_aligned
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(acc_dtype)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=acc_dtype)
    for tile in range(p, tl.cdiv(rows, ROWS_TILE), tl.num_programs(1)):  # p, p + P, p + 2P, ...
        row_ids = (tile * ROWS_TILE + tl.arange(0, ROWS_TILE)).to(tl.int64)
        row_mask = row_ids < rows
        mask = row_mask[:, None] & col_mask[None, :]
        # Both loads come before the store: the compiler cannot prove that grad_x and x do not
        # overlap, so a load after the store would wait for it (18% slower: NOTES item 15).
        if NEED_GRAD_W:
            x_starts = row_ids * ((stride_row // X_ROW_ALIGN) * X_ROW_ALIGN)
            offsets = x_starts[:, None] + cols[None, :].to(tl.int64) * stride_col
            x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        grad_y = tl.load(grad_y_ptr + row_ids * stride_grad_y, mask=row_mask, other=0.0)
        grad_y = grad_y.to(acc_dtype)
        if NEED_GRAD_X:  # the product rounded once, into grad_x's dtype, as PyTorch rounds it
            grad_x = (grad_y[:, None] * w[None, :]).to(grad_x_ptr.dtype.element_ty)
            # grad_x's row stride: D, written D_aligned so the compiler sees D_ALIGN divide it.
            tl.store(grad_x_ptr + (row_ids * D_aligned)[:, None] + cols[None, :], grad_x, mask=mask)
        if NEED_GRAD_W:
            acc += x.to(acc_dtype) * grad_y[:, None]
    if NEED_GRAD_W:  # a program left without a row tile stores zeros: every partial row is set
        tl.store(partial_ptr + p.to(tl.int64) * D + cols, tl.sum(acc, axis=0), mask=col_mask)


@triton.jit
def sum_partials_kernel(
    partial_ptr,  # partial[0, 0]; a contiguous (P, D) buffer of float32 (float64) sums
    grad_w_ptr,  # grad_w[0], in w's dtype
    P, D,  # rows and columns of partial
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # rows added per step, columns per program
):  # fmt: skip
    cols = tl.program_id(0) * D_TILE + tl.arange(0, D_TILE)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=partial_ptr.dtype.element_ty)
    for p0 in range(0, P, ROWS_TILE):  # always the same order of additions
        p = p0 + tl.arange(0, ROWS_TILE)
        mask = (p < P)[:, None] & (cols < D)[None, :]
        offsets = p.to(tl.int64)[:, None] * D + cols[None, :]
        acc += tl.load(partial_ptr + offsets, mask=mask, other=0.0)
    tl.store(grad_w_ptr + cols, tl.sum(acc, axis=0).to(grad_w_ptr.dtype.element_ty), cols < D)


def launch_backward(x2d, weight, grad_y, need_grad_x, need_grad_w):
    """(grad_x, grad_w) of y = x2d @ weight from the two kernels; None for a gradient not needed."""
    rows, D = x2d.shape
    weight = weight.contiguous()  # the kernel reads w[d] at w_ptr + d
    grad_x = x2d.new_empty(x2d.shape) if need_grad_x else None
    if rows == 0 or D == 0:  # nothing to compute; grad_w, a sum of no rows, is 0
        return grad_x, weight.new_zeros(D) if need_grad_w else None
    grad_w = torch.empty_like(weight) if need_grad_w else None
    sms = torch.cuda.get_device_properties(x2d.device).multi_processor_count if x2d.is_cuda else 1
    P = max(sms, triton.cdiv(PROGRAMS_PER_SM * sms, triton.cdiv(D, 128)))
    P = min(P, rows)  # at most one per row (the tuner picks ROWS_TILE); one with no tile writes 0
    partial = x2d.new_empty((P, D), dtype=torch.promote_types(x2d.dtype, torch.float32))
    backward_kernel[lambda meta: (triton.cdiv(D, meta["D_TILE"]), P)](
        x2d, weight, grad_y, grad_x, partial, rows, D, x2d.stride(0), x2d.stride(1),
        grad_y.stride(0), NEED_GRAD_X=need_grad_x, NEED_GRAD_W=need_grad_w,
        **alignment(x2d),
    )  # fmt: skip
    if need_grad_w:
        sum_partials(partial, grad_w)
    return grad_x, grad_w


def sum_partials(partial, grad_w):
    """grad_w[d] = the sum of partial[:, d], in the same order on every call. Tiles as tall as the
    buffer (up to 1024 rows) and at least 16 wide: few steps, each of which waits on memory."""
    P, D = partial.shape
    rows_tile = min(triton.next_power_of_2(P), 1024)
    d_tile = max(16, 4096 // rows_tile)
    grid = (triton.cdiv(D, d_tile),)
    sum_partials_kernel[grid](partial, grad_w, P, D, ROWS_TILE=rows_tile, D_TILE=d_tile)


# ## Autograd, a torch.autograd.Function (from here on PyTorch, not Triton: skip on a first read)
# WeightedSum.forward runs the forward kernel and saves x and w; backward runs backward_kernel.
# Second derivatives (create_graph=True) need autograd to record the backward, and it cannot see
# into a kernel: there backward uses grad_x = a torch product, grad_w = weighted_sum on x.T.
def launch_forward(x, weight, style="pointer"):
    """y = x @ weight for x of shape (..., D), through the forward kernel of `style`."""
    x2d = rearrange(x, "... d -> (...) d")  # a view where the leading dims merge, else a copy
    if x2d.numel() == 0:  # sums of no terms are 0: no launch, nothing for an autotuner to time
        return x.new_zeros(x.shape[:-1])
    y = x.new_empty(x.shape[:-1])  # contiguous, so y for row r lies r elements after y's start
    FORWARDS[style](x2d, weight.contiguous(), y)
    return y


class WeightedSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, style):
        ctx.save_for_backward(x, weight)
        return launch_forward(x, weight, style)

    @staticmethod
    def backward(ctx, grad_y):
        return (*gradients(*ctx.saved_tensors, grad_y, ctx.needs_input_grad), None)


def gradients(x, weight, grad_y, needs_input_grad, through_op=False):
    """(grad_x, grad_w) of y = x @ weight, None where not needed. through_op: launch the kernels
    through the registered backward_op (below), which torch.compile can record."""
    need_grad_x, need_grad_w = needs_input_grad[:2]
    x2d, grad_y = rearrange(x, "... d -> (...) d"), grad_y.reshape(-1)
    if torch.is_grad_enabled():  # autograd turns it on in backward only under create_graph=True
        grad_x = grad_y[:, None] * weight if need_grad_x else None
        grad_w = weighted_sum(x2d.T, grad_y) if need_grad_w else None
    elif through_op:  # the op returns both gradients
        grad_x, grad_w = backward_op(x2d, weight, grad_y)
    else:
        grad_x, grad_w = launch_backward(x2d, weight, grad_y, need_grad_x, need_grad_w)
    return (None if grad_x is None else grad_x.reshape(x.shape)), grad_w


def weighted_sum(x, weight, style="pointer"):
    """x @ weight over the last dim of x (..., D), weight (D,): a tensor of shape x.shape[:-1],
    differentiable twice and compilable. `style` picks the forward kernel."""
    validate(x, weight, style)
    if torch.compiler.is_compiling():  # see "The registered op" below
        return torch.ops.triton_lessons.weighted_sum(x, weight, style)
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad):
        return WeightedSum.apply(x, weight, style)
    return launch_forward(x, weight, style)  # no gradients wanted: skip autograd's bookkeeping


def validate(x, weight, style="pointer"):
    """Raise TypeError or ValueError, naming the problem, unless weighted_sum can run."""
    for name, t in (("x", x), ("weight", weight)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in DTYPES.values():
            raise TypeError(f"{name} is {t.dtype}; expected one of {', '.join(DTYPES)}")
    if x.dtype != weight.dtype:
        raise TypeError(f"x is {x.dtype} but weight is {weight.dtype}; give both one dtype")
    if weight.dim() != 1 or x.dim() == 0 or x.shape[-1] != weight.shape[0]:
        shapes = f"x has shape {tuple(x.shape)} and weight {tuple(weight.shape)}"
        raise ValueError(f"{shapes}: expected x (..., D), at least 1-D, and weight of shape (D,)")
    if x.device != weight.device or x.device.type != common.DEVICE.type:
        where = f"x is on {x.device} and weight on {weight.device}"
        raise ValueError(f"{where}: both must be on {common.DEVICE.type}")
    if style not in FORWARDS:
        raise ValueError(f"style {style!r} is not one of {list(FORWARDS)}")


VARIANTS = {style: lambda x, w, style=style: weighted_sum(x, w, style) for style in FORWARDS}


# ## The registered op, for torch.compile
# torch.compile cannot trace a Triton launch under the CPU interpreter (on a GPU, an op made with
# torch.library.triton_op could), so under torch.compile weighted_sum calls this op instead:
# - custom_op makes the forward one opaque node of the compiled graph;
# - register_fake gives the compiler the output's shape and dtype, without a launch;
# - register_autograd gives its gradients, through a second op, backward_op, that computes both.
# Eager calls use the Function above, the usual way to give kernels gradients.
@torch.library.custom_op("triton_lessons::weighted_sum", mutates_args=())
def weighted_sum_op(x: torch.Tensor, weight: torch.Tensor, style: str = "pointer") -> torch.Tensor:
    validate(x, weight, style)
    return launch_forward(x, weight, style)


@weighted_sum_op.register_fake
def _(x, weight, style="pointer"):
    validate(x, weight, style)
    return x.new_empty(x.shape[:-1])


@torch.library.custom_op("triton_lessons::weighted_sum_backward", mutates_args=())
def backward_op(x2d: torch.Tensor, w: torch.Tensor, grad_y: torch.Tensor) -> list[torch.Tensor]:
    return list(launch_backward(x2d, w, grad_y, True, True))  # an op returns tensors, never None


backward_op.register_fake(lambda x2d, w, grad_y: [x2d.new_empty(x2d.shape), w.new_empty(w.shape)])


def op_gradients(ctx, grad_y):  # weighted_sum_op's backward, as register_autograd calls it
    return (*gradients(*ctx.saved_tensors, grad_y, ctx.needs_input_grad, through_op=True), None)


weighted_sum_op.register_autograd(
    op_gradients, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs[:2])
)


# ## Benchmark and command line
SHAPES = ((65536, 1024), (16384, 4096), (65536, 1000), (1048576, 128))  # (rows, dim)
SWEEP = [dict(rows=r, dim=d, dtype=dtype) for dtype in ("float32", "bfloat16") for r, d in SHAPES]


def benchmark(rows, dim, dtype="float32"):
    """GPU and host time of each variant's forward ("fwd") and the backward alone ("bwd"), against
    x @ w and its autograd; also a bare forward_kernel launch, and the entry with gradients."""
    kw = dict(dtype=DTYPES.get(dtype, dtype), device=common.DEVICE)
    x = torch.randn(rows, dim, **kw)
    weight, grad_y = torch.randn(dim, **kw), torch.randn(rows, **kw)
    leaves = (x.detach().requires_grad_(), weight.detach().requires_grad_())
    fwd = {"torch": lambda: x @ weight}
    fwd.update({name: lambda fn=fn: fn(x, weight) for name, fn in VARIANTS.items()})
    fwd["pointer, inputs need grad"] = lambda: weighted_sum(*leaves)
    args, named = (x, weight, torch.empty(rows, **kw), rows, dim, *x.stride()), alignment(x)
    grid = lambda meta: (triton.cdiv(rows, meta["ROWS_TILE"]),)  # noqa: E731
    fwd["forward_kernel[grid] bare"] = lambda: forward_kernel[grid](*args, **named)
    fwd = {name: (call, lambda: None) for name, call in fwd.items()}  # name: (call, its setup)
    # A backward's setup makes new leaves and runs a forward on the stream that times it: autograd
    # runs each node of a backward on the stream of its forward, a leaf's where the leaf was made.
    last = {}

    def forward_for(fn):
        def setup():
            last["x"] = (x.detach().requires_grad_(), weight.detach().requires_grad_())
            last["y"] = fn(*last["x"])

        return setup

    def run_backward():
        return torch.autograd.grad(last["y"], last["x"], grad_y, retain_graph=True)

    bwd = {"torch": (run_backward, forward_for(torch.matmul))}
    bwd["weighted_sum"] = (run_backward, forward_for(weighted_sum))
    # Elements a pass must move: x, w and y; then x, grad_y, w, grad_x and grad_w.
    elements = {"fwd": (rows + 1) * dim + rows, "bwd": 2 * (rows + 1) * dim + rows}
    case = f"{rows}x{dim} {str(x.dtype).removeprefix('torch.')}"
    ceiling, results = common.copy_ceiling_gbps(), []

    def add_row(name, times, torch_times, pass_name):
        gbps = common.gbps(elements[pass_name] * x.element_size(), times[0])
        results.append(common.timing_row(case, name, times, torch_times, gbps, "GB/s", ceiling))

    for pass_name, calls in (("fwd", fwd), ("bwd", bwd)):
        torch_times = common.measure(*calls["torch"])
        for name, (call, setup) in calls.items():
            times = torch_times if name == "torch" else common.measure(call, setup)
            add_row(f"{name} {pass_name}", times, torch_times, pass_name)
            if name == "pointer" and not common.INTERPRETED:  # the same kernel, no Python at all
                graph_times = (times[0], common.host_us(common.capture_graph(call).replay))
                add_row("pointer from a CUDA graph fwd", graph_times, torch_times, "fwd")
    return results


def main(argv=None):
    parser = tools.lesson_parser(sys.modules[__name__])  # also --draw, --asm: tools/
    default_rows, default_dim = (1000, 100) if common.INTERPRETED else (65536, 1024)
    parser.add_argument("--rows", type=int, default=default_rows, help="rows of x")
    parser.add_argument("--dim", type=int, default=default_dim, help="D, the length of a row")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32", help="of x and w")
    args = parser.parse_args(argv)
    if args.rows < 0 or args.dim < 0:
        parser.error(f"--rows and --dim must be >= 0, got {args.rows} and {args.dim}")
    print(common.describe_run())
    x = torch.randn(args.rows, args.dim, dtype=DTYPES[args.dtype], device=common.DEVICE)
    checked = check(x, VARIANTS)
    print(f"check passed: y, grad_x and grad_w of {', '.join(checked)} match float64\n")
    common.print_table(benchmark(args.rows, args.dim, args.dtype), common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
