"""Weighted sum y = x @ w over the last dimension, forward and backward in Triton, as a PyTorch op.

x has shape (..., D), w has shape (D,), y has shape (...). With the leading dims flattened into rows r:

    y[r]         = sum_d x[r, d] * w[d]         one dot product per row
    grad_x[r, d] = grad_y[r] * w[d]             grad_y (outer product) w: nothing to add up, pure streaming
    grad_w[d]    = sum_r x[r, d] * grad_y[r]    x^T grad_y: a sum over ALL rows, which many programs share

For grad_w each backward program adds its rows into one row of a small [programs, D] buffer, and
sum_partials_kernel adds its rows in a fixed order: on one GPU and tile, the same bits every call, no atomics.
Then: the op that autograd and torch.compile see, second derivatives, the float64 check, the forward again
through block pointers and tensor descriptors, and the whole in PyTorch operations.
"""

import argparse
import functools
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (before any kernel is defined: it may switch on the interpreter)

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}

# (ROWS_TILE, D_TILE, num_warps) the autotuner times on a GPU once per bucket (common.launch_tuned; per D with
# LESSONS_TUNE_EVERY_SHAPE=1): small tiles need few registers, so many programs share an SM; wide rows get wide D
# tiles, long reads. suit_d keeps D tiles from min(W, 128) (shorter reads waste bandwidth) to max(W, 32) (wider only
# loads masked lanes), W = D rounded up to a power of two; `or configs` falls back to them all (the interpreter's one).
# Past the first two (D <= 64): on each of 12 shapes one within 1% of the best of 15, fwd and bwd (NOTES item 41).
GPU_TILES = [(128, 32, 4), (64, 64, 4), (8, 128, 4), (32, 128, 4), (128, 128, 8), (16, 256, 4), (8, 512, 4),
             (4, 1024, 4), (16, 1024, 8)]
TILES = [(16, 64, 4)] if common.INTERPRETED else GPU_TILES


def autotune_tiles(key, max_tile=1024):
    def suit_d(configs, named_args, **kwargs):  # the autotuner passes the launch's other arguments as kwargs
        width = common.next_power_of_2(named_args["D"])
        return [c for c in configs if min(width, 128) <= c.kwargs["D_TILE"] <= max(width, 32)] or configs

    configs = [triton.Config({"ROWS_TILE": r, "D_TILE": d}, num_warps=w) for r, d, w in TILES if max(r, d) <= max_tile]
    return triton.autotune(configs=configs, key=key, prune_configs_by={"early_config_prune": suit_d}, **common.TUNING)


# ## Forward: a program owns ROWS_TILE rows and walks D in steps of D_TILE. Its [ROWS_TILE, D_TILE] accumulator is
# reduced across D once, at the end: the loop is loads and multiply-adds, no data moves between threads.
# Wide loads: to move 16 bytes per instruction the compiler must know that a row starts 16-byte aligned and that
# the mask `cols < D` is constant over each 16 bytes. It only sees whether an integer argument divides by 16, so at
# D = 1000 it would go element by element. The host passes X_ROW_ALIGN and D_ALIGN, the largest powers of two (up to
# 16 bytes of elements) dividing the row stride and D: (D // D_ALIGN) * D_ALIGN is D, its divisibility made visible.
@autotune_tiles(key=["D", "X_ROW_ALIGN", "D_ALIGN"])
@triton.jit(do_not_specialize=["rows"])  # rows only bounds loops and masks: no compile per row count
def forward_pointer_kernel(
    x_ptr, w_ptr, y_ptr, rows, D,  # x[0, 0] of x (rows, D), any strides; w[0] and y[0], contiguous
    stride_x_row, stride_x_col,  # elements from x[r, d] to x[r + 1, d], and to x[r, d + 1]
    X_ROW_ALIGN: tl.constexpr, D_ALIGN: tl.constexpr,  # powers of two dividing stride_x_row, and D
    ACC_DTYPE: tl.constexpr,  # tl.float32, or tl.float64 for float64 input
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # tile shape, from the autotuner
):
    row_ids = tl.program_id(0) * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    # int64 before multiplying by the stride: past 2^31 elements the int32 product overflows.
    row_starts = row_ids.to(tl.int64) * ((stride_x_row // X_ROW_ALIGN) * X_ROW_ALIGN)
    D_shown_aligned = (D // D_ALIGN) * D_ALIGN  # D itself, in a form that shows the compiler D_ALIGN divides it
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=ACC_DTYPE)
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D_shown_aligned
        x = tl.load(x_ptr + row_starts[:, None] + cols.to(tl.int64)[None, :] * stride_x_col,
                    mask=row_mask[:, None] & col_mask[None, :], other=0.0)  # lanes outside x load 0: add nothing
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        # Widen before multiplying: fp16/bf16 products are exact in float32 but would be rounded to 16 bits.
        acc += x.to(ACC_DTYPE) * w.to(ACC_DTYPE)[None, :]
    tl.store(y_ptr + row_ids, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), mask=row_mask)


# ## Backward: the grid is (D tiles, programs). Each program owns one D tile and visits row tiles pid, pid +
# programs, ...: it writes grad_x = grad_y[:, None] * w[None, :] and adds x * grad_y[:, None] into an accumulator,
# summed at the end into row pid of the partial buffer. x is read once, grad_x written once.
@autotune_tiles(key=["D", "X_ROW_ALIGN", "D_ALIGN", "NEED_GRAD_X", "NEED_GRAD_W"])
@triton.jit(do_not_specialize=["rows"])  # as the forward
def backward_kernel(
    x_ptr, w_ptr, grad_y_ptr,  # x[0, 0] of x (rows, D), any strides; w[0], contiguous; grad_y[0]
    grad_x_ptr, partial_ptr, rows, D,  # grad_x[0, 0], partial[0, 0]: contiguous (rows, D) and (programs, D)
    stride_x_row, stride_x_col, stride_grad_y,  # x's strides; grad_y's, 0 when broadcast (as from y.sum())
    X_ROW_ALIGN: tl.constexpr, D_ALIGN: tl.constexpr,  # as in the forward; D is also grad_x's row stride
    NEED_GRAD_X: tl.constexpr, NEED_GRAD_W: tl.constexpr,  # which gradients autograd asks for
    ACC_DTYPE: tl.constexpr, ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # as in the forward
):
    d0, pid = tl.program_id(0) * D_TILE, tl.program_id(1)
    D_shown_aligned = (D // D_ALIGN) * D_ALIGN  # D, as in the forward
    cols = d0 + tl.arange(0, D_TILE)
    col_mask = cols < D_shown_aligned
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(ACC_DTYPE)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=ACC_DTYPE)
    for tile in range(pid, tl.cdiv(rows, ROWS_TILE), tl.num_programs(1)):
        row_ids = (tile * ROWS_TILE + tl.arange(0, ROWS_TILE)).to(tl.int64)
        row_mask = row_ids < rows
        mask = row_mask[:, None] & col_mask[None, :]
        # Both loads before the store: the compiler cannot prove that grad_x misses x, so a load after it waits.
        if NEED_GRAD_W:
            x_starts = row_ids * ((stride_x_row // X_ROW_ALIGN) * X_ROW_ALIGN)
            x = tl.load(x_ptr + x_starts[:, None] + cols.to(tl.int64)[None, :] * stride_x_col, mask=mask, other=0.0)
        grad_y = tl.load(grad_y_ptr + row_ids * stride_grad_y, mask=row_mask, other=0.0).to(ACC_DTYPE)
        if NEED_GRAD_X:  # the product rounded once, into grad_x's dtype, as PyTorch rounds it
            tl.store(grad_x_ptr + (row_ids * D_shown_aligned)[:, None] + cols[None, :],
                     (grad_y[:, None] * w[None, :]).to(grad_x_ptr.dtype.element_ty), mask=mask)
        if NEED_GRAD_W:
            acc += x.to(ACC_DTYPE) * grad_y[:, None]
    if NEED_GRAD_W:  # a program left without a row tile writes zeros: every row of the buffer is defined
        tl.store(partial_ptr + pid.to(tl.int64) * D + cols, tl.sum(acc, axis=0), mask=col_mask)


@triton.jit
def sum_partials_kernel(
    partial_ptr, grad_w_ptr, programs, D,  # partial[0, 0] (contiguous (programs, D)), grad_w[0] (w's dtype)
    BLOCK_P: tl.constexpr, BLOCK_D: tl.constexpr,  # buffer rows added per step, columns per program
):
    # grad_w's second pass: column sums of the buffer, each column added in the same order on every call.
    cols = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    acc = tl.zeros((BLOCK_P, BLOCK_D), dtype=partial_ptr.dtype.element_ty)
    for p0 in range(0, programs, BLOCK_P):
        rows = p0 + tl.arange(0, BLOCK_P)
        mask = (rows < programs)[:, None] & (cols < D)[None, :]
        acc += tl.load(partial_ptr + rows.to(tl.int64)[:, None] * D + cols[None, :], mask=mask, other=0.0)
    tl.store(grad_w_ptr + cols, tl.sum(acc, axis=0).to(grad_w_ptr.dtype.element_ty), mask=cols < D)


# ## Launchers. FORWARD (after the last kernels) maps each style to its forward kernel and its layout arguments.
# Backward programs per D tile: about BACKWARD_PROGRAMS_PER_SM per SM in all, counting D tiles of PLANNING_D_TILE (the
# autotuner picks the real one), at least one per SM; fewer leave the second pass fewer partial rows (results/NOTES.md
# items 17, 26). The interpreter is one "SM".
BACKWARD_PROGRAMS_PER_SM, PLANNING_D_TILE, SUM_PARTIALS_MAX_ROWS, SUM_PARTIALS_TILE = 8, 128, 1024, 4096
SMALLEST_ROWS_TILE = min(rows_tile for rows_tile, _, _ in TILES)


def pointer_args(x2d):
    (stride_row, stride_col), vector = x2d.stride(), 16 // x2d.element_size()  # vector: elements in 16 bytes
    return dict(stride_x_row=stride_row, stride_x_col=stride_col,  # gcd(n, vector): the power of two wanted
                X_ROW_ALIGN=math.gcd(stride_row, vector), D_ALIGN=math.gcd(x2d.shape[1], vector))


def new_tensor(shape, template, poison, dtype=None):  # on template's device; uninitialised, or NaN for check()
    kw = {"dtype": dtype or template.dtype, "device": template.device}
    return torch.full(shape, float("nan"), **kw) if poison else torch.empty(shape, **kw)


def launch_forward(x: torch.Tensor, weight: torch.Tensor, style: str = "pointer", poison: bool = False) -> torch.Tensor:
    """y = x @ weight through the forward kernel of `style`, tuned once per bucket (common.launch_tuned)."""
    (rows, D), (kernel, layout_args) = (math.prod(x.shape[:-1]), x.shape[-1]), FORWARD[style]
    # reshape: a view where the leading dims merge, else one copy; a 2-D x skips it, as each call costs host time
    x2d, y = x if x.dim() == 2 else x.reshape(rows, D), new_tensor(x.shape[:-1], x, poison)
    if not (rows and D):
        return y.zero_()  # a sum of no terms is 0
    acc_dtype, layout = tl.float64 if x.dtype == torch.float64 else tl.float32, layout_args(x2d)
    bucket = (common.next_power_of_2(D), x.dtype, layout.get("X_ROW_ALIGN"), layout.get("D_ALIGN"))  # what picks a tile
    common.launch_tuned(kernel, lambda meta: (common.cdiv(rows, meta["ROWS_TILE"]),), bucket,
                        x2d, weight.contiguous(), y, rows, D, ACC_DTYPE=acc_dtype, **layout)
    return y


def launch_backward(x2d: torch.Tensor, weight: torch.Tensor, grad_y: torch.Tensor, need_grad_x: bool,
                    need_grad_w: bool, poison: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(grad_x, grad_w) by backward_kernel and sum_partials; one not needed is an empty stand-in the kernel skips."""
    rows, D = x2d.shape
    grad_x = new_tensor((rows, D) if need_grad_x else (0,), x2d, poison)
    grad_w = new_tensor((D,) if need_grad_w else (0,), x2d, poison)
    if not (rows and D):
        return grad_x.zero_(), grad_w.zero_()
    sms = 1 if common.INTERPRETED else common.multiprocessor_count(x2d.device)
    programs = max(sms, common.cdiv(BACKWARD_PROGRAMS_PER_SM * sms, common.cdiv(D, PLANNING_D_TILE)))
    programs = min(programs, common.cdiv(rows, SMALLEST_ROWS_TILE))
    acc_dtypes = (torch.float64, tl.float64) if x2d.dtype == torch.float64 else (torch.float32, tl.float32)
    partial = new_tensor((programs, D), x2d, poison, acc_dtypes[0]) if need_grad_w else grad_w  # else: a stand-in
    layout = pointer_args(x2d)
    bucket = (common.next_power_of_2(D), x2d.dtype, layout["X_ROW_ALIGN"], layout["D_ALIGN"], need_grad_x, need_grad_w)
    common.launch_tuned(backward_kernel, lambda meta: (common.cdiv(D, meta["D_TILE"]), programs), bucket,
                        x2d, weight.contiguous(), grad_y, grad_x, partial, rows, D, stride_grad_y=grad_y.stride(0),
                        NEED_GRAD_X=need_grad_x, NEED_GRAD_W=need_grad_w, ACC_DTYPE=acc_dtypes[1], **layout)
    if need_grad_w:
        sum_partials(partial, grad_w)
    return grad_x, grad_w


def sum_partials(partial, grad_w):
    """grad_w[d] = the sum of partial[:, d], always in the same order. Tiles as tall as the buffer (up to SUM_PARTIALS_
    MAX_ROWS), of about SUM_PARTIALS_TILE elements (16 columns at least): few steps, as this pass waits on latency."""
    programs, D = partial.shape
    block_p = min(common.next_power_of_2(programs), SUM_PARTIALS_MAX_ROWS)
    block_d = max(16, SUM_PARTIALS_TILE // block_p)
    common.launch(sum_partials_kernel, (common.cdiv(D, block_d),), partial, grad_w, programs, D, BLOCK_P=block_p, BLOCK_D=block_d)


# ## The PyTorch op. torch.library.custom_op registers the launchers as triton_lessons::weighted_sum and
# ::weighted_sum_backward; register_fake gives torch.compile the outputs' shapes, so it traces around the kernels
# and host-side planning (SM count, autotuner) stays out of dynamo's way (triton_op would trace the kernel itself,
# which fails on fake tensors under the CPU interpreter). Dispatch through an op costs host time: compiling only.
# Second derivatives: grad_x = grad_y (outer) w is a product, and grad_w = x^T grad_y is weighted_sum itself, on
# the transposed view x.T (the pointer kernels take any strides). When autograd records the backward
# (create_graph=True, as hessian and gradgradcheck do), grad mode is on inside it and both gradients come from
# these differentiable calls; otherwise backward_kernel makes both in one pass over x. Autograd cannot look into
# that kernel: recorded, it would give second derivatives of zero.
weighted_sum_op = torch.library.custom_op("triton_lessons::weighted_sum", launch_forward, mutates_args=())
weighted_sum_op.register_fake(lambda x, weight, style="pointer", poison=False: x.new_empty(x.shape[:-1]))
backward_op = torch.library.custom_op("triton_lessons::weighted_sum_backward", launch_backward, mutates_args=())
backward_op.register_fake(lambda x2d, weight, grad_y, need_grad_x, need_grad_w, poison: (
    x2d.new_empty(x2d.shape if need_grad_x else (0,)), x2d.new_empty(weight.shape if need_grad_w else (0,))))


def save_inputs(ctx, inputs, output):  # register_autograd passes the output too; unused
    x, weight, _, ctx.poison = inputs  # the style only picks the forward kernel
    ctx.save_for_backward(x, weight)


def weighted_sum_grads(ctx, grad_y, fused_backward=launch_backward):  # the op's autograd passes backward_op
    (x, weight), (need_grad_x, need_grad_w) = ctx.saved_tensors, ctx.needs_input_grad[:2]
    grad_y = grad_y.reshape(-1)  # a view, even of a broadcast grad_y (stride 0)
    x2d = x.reshape(grad_y.numel(), weight.shape[0])
    if torch.is_grad_enabled():  # create_graph=True: differentiable calls only
        grad_x = grad_y[:, None] * weight if need_grad_x else None
        grad_w = weighted_sum(x2d.T, grad_y) if need_grad_w else None
    else:
        grad_x, grad_w = fused_backward(x2d, weight, grad_y, need_grad_x, need_grad_w, ctx.poison)
    return (grad_x.reshape(x.shape) if need_grad_x else None), (grad_w if need_grad_w else None), None, None


weighted_sum_op.register_autograd(functools.partial(weighted_sum_grads, fused_backward=backward_op),  # compiled
                                  setup_context=save_inputs)
weighted_sum_autograd = common.eager_autograd("weighted_sum", launch_forward, save_inputs, weighted_sum_grads)


def weighted_sum(x, weight, style="pointer", poison=False):
    """x @ weight over the last dim of x (..., D), weight (D,): shape x.shape[:-1], differentiable twice, compilable.
    style picks the forward kernel ("pointer" takes every layout on every Triton); poison=True fills the outputs
    with NaN before the kernels write them, for check()."""
    validate(x, weight, style)
    if torch.compiler.is_compiling():
        return weighted_sum_op(x, weight, style, poison)
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad):
        return weighted_sum_autograd(x, weight, style, poison)  # the op's autograd, minus the dispatcher's cost
    return launch_forward(x, weight, style, poison)  # eager without gradients: the plain launch is cheapest


def validate(x, weight, style="pointer"):
    """Raise TypeError/ValueError naming the problem unless weighted_sum(x, weight, style) can run here."""
    for name, t in (("x", x), ("weight", weight)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in DTYPES.values():
            raise TypeError(f"{name} is {t.dtype}; expected a floating-point dtype: {', '.join(DTYPES)}")
    if x.dtype != weight.dtype:
        raise TypeError(f"x is {x.dtype} but weight is {weight.dtype}; give both the same dtype")
    if weight.dim() != 1 or x.dim() == 0 or x.shape[-1] != weight.shape[0]:
        raise ValueError(f"x has shape {tuple(x.shape)} and weight {tuple(weight.shape)}: expected x of shape "
                         "(..., D), at least 1-D, and weight of shape (D,), its length x's last dimension")
    if x.device != weight.device or x.device.type != common.DEVICE.type:
        raise ValueError(f"x is on {x.device} and weight on {weight.device}: both must be on {common.DEVICE.type}")
    if style not in FORWARD or style in UNAVAILABLE:
        why = UNAVAILABLE.get(style, f"expected one of {list(FORWARD)}")
        raise ValueError(f"style {style!r} cannot run here: {why}")


def reference(x, weight):
    return (x * weight).sum(-1)  # the plain PyTorch expression


def check(rows, d, dtype=torch.float32, layout="contiguous", batch=()):
    """y, grad_x and grad_w of each variant taking x (*batch, rows, d) against float64, outputs first NaN; x "contiguous",
    "transposed" (last two dims swapped) or "sliced" (columns 1..d of a wider x: unaligned). Returns those checked."""
    kw = {"dtype": DTYPES.get(dtype, dtype), "device": common.DEVICE}
    x = {"contiguous": lambda: torch.randn(*batch, rows, d, **kw),
         "transposed": lambda: torch.randn(*batch, d, rows, **kw).transpose(-1, -2),
         "sliced": lambda: torch.randn(*batch, rows, d + 3, **kw)[..., 1 : d + 1]}[layout]()
    weight, grad_y = torch.randn(d, **kw), torch.randn(x.shape[:-1], **kw)
    x64, w64, g64, leading_dims = x.double(), weight.double(), grad_y.double()[..., None], tuple(range(x.dim() - 1))
    # grad_x is one product rounded once: the right answer is the float64 product rounded into the dtype (which
    # also covers float16 products below 2^-14, whose subnormal rounding no relative bound describes).
    exact_gx = g64 * w64  # g64: grad_y as a column
    expected = {"y": ((x64 * w64).sum(-1), (x64.abs() * w64.abs()).sum(-1), d),
                "grad_x": (exact_gx.to(x.dtype).double(), exact_gx.abs(), 1),
                "grad_w": ((x64 * g64).sum(leading_dims), (x64.abs() * g64.abs()).sum(leading_dims), g64.numel())}
    case, checked = f"x {tuple(x.shape)} {layout} {x.dtype}", []
    for name, fn in VARIANTS.items():
        if name == "descriptor" and descriptor_problem(x.flatten(0, -2)):
            continue  # it refuses x with a ValueError (tests/test_04_weighted_sum.py checks that)
        x_in, w_in = x.detach().requires_grad_(), weight.detach().requires_grad_()
        y = fn(x_in, w_in, poison=True) if name in FORWARD else fn(x_in, w_in)  # PyTorch's ops write every element
        grads = torch.autograd.grad(y, (x_in, w_in), grad_y)
        for (what, (want, magnitude, terms)), got in zip(expected.items(), (y, *grads)):
            if got.dtype != x.dtype:
                raise AssertionError(f"{name} {what} on {case}: dtype {got.dtype}, expected {x.dtype}")
            common.assert_close(got, want, magnitude, terms, f"{name} {what} on {case}")
        checked.append(name)
    return checked


# ## Block pointers, the forward again: tl.make_block_ptr describes the whole tensor (shape, strides) and one tile
# of it (offsets, block_shape); tl.advance moves the tile, and the dims named in boundary_check load 0 outside the
# tensor, so no masks and no alignment arguments. Triton 3.9 removed them (see UNAVAILABLE). Only the forward is
# written in the block-pointer and descriptor styles: their backward would walk the same tiles, so every style
# shares backward_kernel, and the comparison of the styles stays on one kernel.
@autotune_tiles(key=["D"])
@triton.jit(do_not_specialize=["rows"])  # as forward_pointer_kernel
def forward_block_ptr_kernel(
    x_ptr, w_ptr, y_ptr, rows, D, stride_x_row, stride_x_col,  # as in forward_pointer_kernel
    ACC_DTYPE: tl.constexpr, ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # as there
):
    row0 = tl.program_id(0) * ROWS_TILE
    # order lists the dims from fastest-varying to slowest: a hint; other strides still work.
    x_block = tl.make_block_ptr(x_ptr, shape=(rows, D), strides=(stride_x_row, stride_x_col), offsets=(row0, 0),
                                block_shape=(ROWS_TILE, D_TILE), order=(1, 0))
    w_block = tl.make_block_ptr(w_ptr, shape=(D,), strides=(1,), offsets=(0,), block_shape=(D_TILE,), order=(0,))
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=ACC_DTYPE)
    for _ in range(0, D, D_TILE):
        x = tl.load(x_block, boundary_check=(0, 1), padding_option="zero")
        w = tl.load(w_block, boundary_check=(0,), padding_option="zero")
        acc += x.to(ACC_DTYPE) * w.to(ACC_DTYPE)[None, :]
        x_block, w_block = tl.advance(x_block, (0, D_TILE)), tl.advance(w_block, (D_TILE,))
    y_block = tl.make_block_ptr(y_ptr, shape=(rows,), strides=(1,), offsets=(row0,), block_shape=(ROWS_TILE,),
                                order=(0,))
    tl.store(y_block, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), boundary_check=(0,))


# ## Tensor descriptors, the API that replaced block pointers: tl.make_tensor_descriptor names the whole 2-D tensor
# once, and a load names a tile by its corner; on Hopper the TMA unit copies the tile to shared memory. The rules:
# 16-byte aligned base, every stride but the last a multiple of 16 bytes, the last stride 1, at most 256 elements
# a side. Broken, a GPU can return wrong sums without an error, so descriptor_args checks them before each launch
# and refuses with a ValueError.
@autotune_tiles(key=["D"], max_tile=256)
@triton.jit(do_not_specialize=["rows"])  # as forward_pointer_kernel
def forward_descriptor_kernel(
    x_ptr, w_ptr, y_ptr, rows, D, stride_x_row,  # as in forward_pointer_kernel; x's column stride is 1
    ACC_DTYPE: tl.constexpr, ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # as there
):
    row0 = tl.program_id(0) * ROWS_TILE
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[rows, D], strides=[stride_x_row, 1],
                                       block_shape=[ROWS_TILE, D_TILE])
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=ACC_DTYPE)
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        x = x_desc.load([row0, d0])  # no mask: the TMA unit fills what lies outside x with zeros
        w = tl.load(w_ptr + cols, mask=cols < D, other=0.0)
        acc += x.to(ACC_DTYPE) * w.to(ACC_DTYPE)[None, :]
    row_ids = row0 + tl.arange(0, ROWS_TILE)
    tl.store(y_ptr + row_ids, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), mask=row_ids < rows)


def descriptor_problem(x2d):
    """Why forward_descriptor_kernel cannot take this (rows, D) x, or None (an empty x launches no kernel)."""
    return common.descriptor_problem(x2d) if x2d.numel() else None


def descriptor_args(x2d):
    if problem := descriptor_problem(x2d):
        raise ValueError(f"the 'descriptor' variant cannot take x of shape {tuple(x2d.shape)}: {problem}")
    common.set_descriptor_allocator()  # at each launch: it lives in a context variable, which threads do not share
    return dict(stride_x_row=x2d.stride(0))


# ## torch_function: the same maths in PyTorch operations, with the backward derived by hand. Matrix-vector products
# do the sums, accumulating fp16/bf16 in float32 like the kernels. No out= tensors: they are not differentiable,
# and with create_graph=True autograd records this backward to differentiate it again.
class WeightedSumTorch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        validate(x, weight)
        ctx.save_for_backward(x, weight)
        return torch.matmul(x, weight)

    @staticmethod
    def backward(ctx, grad_y):
        x, weight = ctx.saved_tensors
        grad_x = grad_y.unsqueeze(-1) * weight if ctx.needs_input_grad[0] else None
        # grad_w contracts grad_y with x over all of grad_y's dims, the leading dims of x.
        grad_w = torch.tensordot(grad_y, x, dims=grad_y.dim()) if ctx.needs_input_grad[1] else None
        return grad_x, grad_w


FORWARD = {"pointer": (forward_pointer_kernel, pointer_args),  # style -> (kernel, its layout arguments)
           "block_ptr": (forward_block_ptr_kernel, lambda x2d: dict(zip(("stride_x_row", "stride_x_col"), x2d.stride()))),
           "descriptor": (forward_descriptor_kernel, descriptor_args)}
UNAVAILABLE = {name: why for name, why in {"block_ptr": common.block_pointers_unavailable()}.items() if why}
VARIANTS = {style: functools.partial(weighted_sum, style=style) for style in FORWARD if style not in UNAVAILABLE}
VARIANTS["torch_function"] = WeightedSumTorch.apply

# ## Benchmark and command line
SWEEP = [dict(rows=rows, dim=dim, dtype=dtype) for dtype in ("float32", "bfloat16")
         for rows, dim in ((65536, 1024), (16384, 4096), (65536, 1000), (1048576, 128))]


def benchmark(rows, dim, dtype="float32"):
    """Eager time (CUDA-graph replay beside it) of the forward and backward of PyTorch and of each variant: "torch"
    is x @ w and autograd through it, "torch naive" (x * w).sum(-1). GB/s counts the bytes a pass must move. The
    block_ptr and descriptor variants differ only in the forward, so only their forward is timed."""
    dtype = DTYPES.get(dtype, dtype)
    x, weight, grad_y = (torch.randn(shape, dtype=dtype, device=common.DEVICE) for shape in ((rows, dim), dim, rows))
    case, eager_ms, results, size = f"{rows}x{dim} {str(dtype).removeprefix('torch.')}", {}, [], x.element_size()
    nbytes = {"fwd": (rows * dim + dim + rows) * size, "bwd": (2 * rows * dim + rows + 2 * dim) * size}
    for name, fn in {"torch": torch.matmul, "torch naive": reference, **VARIANTS}.items():
        if name == "descriptor" and descriptor_problem(x):
            continue
        last = {}  # the latest forward()'s leaves and output, for backward() to walk
        def forward():  # new leaves each time: autograd runs a leaf's node on the stream current when it was made
            leaves = (x.detach().requires_grad_(), weight.detach().requires_grad_())
            last.update(leaves=leaves, y=fn(*leaves))
        backward = lambda: torch.autograd.grad(last["y"], last["leaves"], grad_y, retain_graph=True)  # noqa: E731
        passes = [("fwd", functools.partial(fn, x, weight), lambda: None), ("bwd", backward, forward)]
        for pass_name, call, setup in passes[:1] if name in ("block_ptr", "descriptor") else passes:
            graph_ms = common.bench_graph(call, setup)  # first: before this variant runs on the default stream
            setup()
            eager = eager_ms[f"{name} {pass_name}"] = common.bench(call)
            results.append(common.result_row(case, f"{name} {pass_name}", eager, graph_ms,
                                             common.gbps(nbytes[pass_name], eager), "GB/s",
                                             eager_ms[f"torch {pass_name}"], common.copy_ceiling_gbps()))
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--rows", type=int, default=1000 if common.INTERPRETED else 65536, help="rows of x")
    parser.add_argument("--dim", type=int, default=100 if common.INTERPRETED else 1024, help="D, the length of a row")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32", help="element type of x and w")
    args = parser.parse_args(argv)
    if args.rows < 0 or args.dim < 0:
        parser.error(f"--rows and --dim must be >= 0, got {args.rows} and {args.dim}")
    print(common.describe_run())
    for variant, reason in UNAVAILABLE.items():
        print(f"variant {variant!r} left out: {reason}")
    # descriptor_problem looks only at the layout, so an uninitialised x of that layout will do.
    if problem := descriptor_problem(torch.empty(args.rows, args.dim, dtype=DTYPES[args.dtype], device=common.DEVICE)):
        print(f"variant 'descriptor' left out of the check and the table: {problem}")
    checked = check(args.rows, args.dim, args.dtype)
    print(f"check passed at {args.rows}x{args.dim} {args.dtype}: y, grad_x, grad_w of {', '.join(checked)} match float64")
    print("weighted_sum runs the 'pointer' kernels\n")
    common.print_table(benchmark(args.rows, args.dim, args.dtype), common.RESULT_COLUMNS)
    print("\nGB/s: the bytes a pass must move (fwd: x, w, y; bwd: x, grad_y, w, grad_x, grad_w) over the eager median "
          "time; '% of ceiling' compares it with a device-to-device copy measured in this run; 'x torch' is the time "
          "of x @ w (or of autograd through it) over the row's.")
    if common.INTERPRETED:
        print("Under the interpreter these times measure Python running the kernels, not a GPU.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
