"""weighted_sum: lesson 04's kernels as an op a model can call.

main.py beside this file teaches the kernels; this file makes them safe to call from a model, and
adds nothing to what they compute:
- `weighted_sum(x, weight, style="tuned", *, out=None)` checks its inputs (TypeError or ValueError
  naming what is wrong), writes into `out=` (which may overlap x), and records gradients, second
  ones too; `style` picks the lesson's kernels: "simple" (Part 1), or "tuned" (its fastest:
  Parts 2 and 3 with Part 4's wide loads, the kernels of wide.py);
- `torch.ops.triton_lessons.weighted_sum(x, weight, style)` is the same op registered with
  PyTorch, so that `torch.compile(fullgraph=True)` takes it: on a GPU a
  `torch.library.triton_op`, whose kernels the compiled code launches itself; under the
  interpreter a `custom_op`. Its backward is a second op of the same kind,
  `torch.ops.triton_lessons.weighted_sum_backward`.

From a script anywhere, load this file by its path (the README shows how, for lesson 01's op).
Without a GPU, loading it sets TRITON_INTERPRET=1 for the process, so that Triton runs the kernels
on the CPU.
Run as a script (`python 04_weighted_sum/op.py`), it checks the op on this machine (--help).
"""

import importlib.util
import math
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


# lesson_loader.py, at the repository's root, loads main.py beside this file (it says how, and
# why); it is loaded by its path, so that no module of the caller's can hide it.
LOADER = HERE.parent / "lesson_loader.py"
spec = importlib.util.spec_from_file_location("_triton_lessons_loader", LOADER)
spec.loader.exec_module(loader := importlib.util.module_from_spec(spec))
lesson = loader.load_lesson(HERE)
wide = loader.load_lesson(HERE, "wide.py")  # the lesson's Part 4: the tuned kernels, wide loads
common = lesson.common  # the device, and the checks of out= that every op shares
# triton from the lesson, which imported it after common set TRITON_INTERPRET=1 on a CPU:
# imported before that, Triton's own @triton.jit helpers (tl.sum) would not run interpreted.
triton = lesson.triton

DTYPES = common.OP_DTYPES  # float16, bfloat16, float32 and float64
STYLES = ("simple", "tuned")  # the style argument's values


# The lesson tunes as Triton does by default: every config, each timed for 125 ms, at each new D.
# A model wants its first calls short: the op's kernels drop the configs whose D_TILE does not
# suit D, time each for 25 ms, and keep the winner on disk (cache_results) for the next process.
def tiles_for_d(configs, named_args, **kwargs):
    """The configs whose D_TILE suits D: much wider tiles load mostly masked lanes; much narrower
    ones take many steps. D_TILE from min(width, 128) to max(width, 32) stays, for width = D
    rounded up to a power of 2: D = 1000 keeps 128 to 1024."""
    width = triton.next_power_of_2(named_args["D"])
    fit = [c for c in configs if min(width, 128) <= c.kwargs["D_TILE"] <= max(width, 32)]
    return fit or configs


tune = common.op_autotune(lesson.CONFIGS, ["D"], tiles_for_d)
# wide.py's kernels (.fn: each under its autotuner), tuned the op's way
forward_wide_kernel = tune(wide.forward_wide_kernel.fn)
backward_wide_kernel = tune(wide.backward_wide_kernel.fn)


def validate(x, weight, style="tuned"):
    """y's shape, x.shape[:-1], or TypeError or ValueError naming why weighted_sum cannot run."""
    for name, t in (("x", x), ("weight", weight)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in DTYPES:
            names = ", ".join(str(dtype).removeprefix("torch.") for dtype in DTYPES)
            raise TypeError(f"{name} is {t.dtype}; expected one of {names}")
    if x.dtype != weight.dtype:
        raise TypeError(f"x is {x.dtype} but weight is {weight.dtype}; give both one dtype")
    common.refuse_negated(x=x, weight=weight)
    if weight.dim() != 1 or x.dim() == 0 or x.shape[-1] != weight.shape[0]:
        shapes = f"x has shape {tuple(x.shape)} and weight {tuple(weight.shape)}"
        if weight.dim() != 1 or x.dim() == 0:
            why = "expected x (..., D), at least 1-D, and weight of shape (D,)"
        else:
            why = f"x's last dim, D = {x.shape[-1]}, must be weight's length, {weight.shape[0]}"
        raise ValueError(f"{shapes}: {why}")
    if x.device != weight.device or x.device.type != common.DEVICE.type:
        where = f"x is on {x.device} and weight on {weight.device}"
        raise ValueError(f"{where}: both must be on {common.DEVICE.type}")
    if style not in STYLES:
        raise ValueError(f"style {style!r} is not one of {list(STYLES)}")
    if style == "simple":  # the lesson's first kernels: float32 sums and int32 offsets
        if x.dtype == torch.float64:
            raise TypeError("style 'simple' sums in float32 only: use 'tuned' for float64")
        span = max(common.elements_spanned(x), x.numel())  # x's reach, or grad_x's
        if span > 2**31:
            raise ValueError(f"style 'simple' keeps offsets in int32, and x spans {span} "
                             "elements (over 2^31): use 'tuned'")  # fmt: skip
    # A tile's first row or column, and the count of tiles, are int32 sums and products: at
    # 2^31 - 1 rows the backward's count of row tiles wrapped around (an H200).
    if max(x.shape[-1], math.prod(x.shape[:-1])) >= 2**30:
        raise ValueError(f"x has shape {tuple(x.shape)}: the kernels number rows (x's leading "
                         "dims together) and columns in int32, with room for a tile past the "
                         "end up to 2^30 - 1 of each")  # fmt: skip
    return x.shape[:-1]


def validate_backward(x2d, weight, grad_y, style="tuned"):
    """As validate, for the backward op's (rows, D) x2d and grad_y of shape (rows,)."""
    validate(x2d, weight, style)
    if x2d.dim() != 2:
        raise ValueError(f"x2d has shape {tuple(x2d.shape)}: expected (rows, D)")
    if (grad_y.dtype, grad_y.device) != (x2d.dtype, x2d.device):
        where = f"grad_y is {grad_y.dtype} on {grad_y.device}"
        raise TypeError(f"{where}: expected x2d's {x2d.dtype} on {x2d.device}")
    common.refuse_negated(grad_y=grad_y)
    if grad_y.shape != x2d.shape[:1]:
        shapes = f"grad_y has shape {tuple(grad_y.shape)} and x2d {tuple(x2d.shape)}"
        raise ValueError(f"{shapes}: expected grad_y of shape (rows,)")


def forward(x, weight, style, in_op=False):
    """y = x @ weight by the lesson's forward kernel of `style`, launched as its wrapper does; no
    autograd. Validates at the first call of the inputs' layouts. in_op: from a registered op's
    body (common.traceable), which torch.compile traces and which validates its inputs itself:
    planned each call, as a plan there would outlive the traced tensors."""
    if in_op:
        return plan_forward(x, weight, style, in_op=True)(x, weight)
    return kept_forward_plan(x, weight, style)(x, weight)


def kept_forward_plan(x, weight, style):
    """forward()'s plan for these inputs: made, and the inputs validated, at their layouts' first
    call."""
    key = common.checked_key(forward_key, validate, x, weight, style)
    return common.kept_plan(PLANS, key, plan_forward, x, weight, style)


def forward_key(x, weight, style):  # the style by its index: a list raises here, as in 03's
    return ("forward", STYLES.index(style), *common.layout(x), *common.layout(weight))


def backward(x2d, weight, grad_y, style, need_grad_x=True, need_grad_w=True, in_op=False):
    """(grad_x, grad_w) of y = x2d @ weight by the lesson's backward kernels of `style`, launched
    as its wrapper does, None where not needed; x2d (rows, D), grad_y (rows,). in_op: as
    forward's."""
    if x2d.numel() == 0:  # grad_x has no elements or is 0; grad_w, a sum of no rows, is 0
        grad_x, grad_w = x2d.new_zeros(x2d.shape), weight.new_zeros(weight.shape)
    elif in_op:
        grad_x, grad_w = plan_backward(x2d, weight, grad_y, style, in_op=True)(x2d, weight, grad_y)
    else:  # (a batched grad_y, autograd.grad's is_grads_batched, trips the key)
        key = common.checked_key(backward_key, validate_backward, x2d, weight, grad_y, style)
        planned = common.kept_plan(PLANS, key, plan_backward, x2d, weight, grad_y, style)
        grad_x, grad_w = planned(x2d, weight, grad_y)
    return grad_x if need_grad_x else None, grad_w if need_grad_w else None


# forward()'s and backward()'s plans (common.kept_plan: what a plan is; here the output's shape,
# the tiles, the grid, the split, and forward's checks), one for each layout of the inputs: keyed
# by all that decides the kernels and their arguments but the tensors' addresses. The launches are
# keyed by the same (a Named launcher, common/launch.py), so the Launcher skips its own key.
PLANS = {}


def backward_key(x2d, weight, grad_y, style):
    layouts = (*common.layout(x2d), *weight_layout(weight), *common.layout(grad_y))
    return ("backward", style, *layouts)


def weight_layout(weight):  # its shape, dtype and device are x's (validate)
    return weight.stride(), weight.data_ptr() % 16


def plan_forward(x, weight, style, in_op=False, key=None):
    """A function of (x, weight) of these layouts that returns x @ weight by the kernel of
    `style`. Raises validate()'s errors, but in_op (the op's body has validated its inputs).
    key: the layouts' key, the Launcher's kind for the launch."""
    if not in_op:
        validate(x, weight, style)
    x2d, out_shape = as_2d(x), x.shape[:-1]
    if x.numel() == 0:  # sums of no terms are 0: no launch, so no autotuner times an empty one
        return lambda x, weight: x.new_zeros(out_shape)
    (rows, d), strides = x2d.shape, x2d.stride()
    if style == "simple":  # lesson.forward_simple
        kernel, tiles = lesson.simple_forward_kernel, SIMPLE_TILE
        grid = (common.cdiv(rows, SIMPLE_TILE["ROWS_TILE"]),)
    else:  # wide.forward_wide
        kernel, tiles = forward_wide_kernel, wide.alignment(x2d)
        grid = lambda meta: (common.cdiv(rows, meta["ROWS_TILE"]),)  # noqa: E731

    def planned(x, weight):
        x2d = x if x.dim() == 2 else x.reshape(rows, d)
        y = x.new_empty(out_shape)  # (rows,) as out_shape
        launch = common.traceable(kernel, in_op, key)
        launch[grid](x2d, weight.contiguous(), y, rows, d, *strides, **tiles)
        return y

    return planned


def plan_backward(x2d, weight, grad_y, style, in_op=False, key=None):
    """A function of (x2d, weight, grad_y) of these layouts that returns (grad_x, grad_w) by the
    kernels of `style`. key: as plan_forward's; the second pass launches other arguments, so
    its kind is another."""
    if not in_op:  # (the backward op's validate_backward has checked grad_y)
        common.refuse_negated(grad_y=grad_y)  # autograd's: x and weight were checked forward
    (rows, d), strides = x2d.shape, x2d.stride()
    sum_dtype = torch.promote_types(x2d.dtype, torch.float32)
    if style == "simple":  # lesson.backward_simple: a program per 16 rows, a partial row each
        programs = common.cdiv(rows, SIMPLE_TILE["ROWS_TILE"])
        kernel, tiles, grid = lesson.simple_backward_kernel, SIMPLE_TILE, (programs,)
    else:  # wide.backward_wide: P programs down each D tile, then the fixed-order sum
        programs = split(rows, d, x2d.device)
        kernel, tiles = backward_wide_kernel, wide.alignment(x2d)
        grid = lambda meta: (common.cdiv(d, meta["D_TILE"]), programs)  # noqa: E731
        second_grid, second_tile = wide.sum_partials_tile(programs, d)  # wide.py's second pass
    second_kind = None if key is None else (key, "second pass")

    def planned(x2d, weight, grad_y):
        weight, grad_y = weight.contiguous(), grad_y.contiguous()  # y.sum()'s grad_y: expanded
        grad_x = x2d.new_empty((rows, d))
        partial = x2d.new_empty((programs, d), dtype=sum_dtype)  # a row of sums a program
        launch = common.traceable(kernel, in_op, key)
        launch[grid](x2d, weight, grad_y, grad_x, partial, rows, d, *strides, **tiles)
        if style == "simple":
            return grad_x, partial.sum(0).to(weight.dtype)
        # wide.sum_partials, with its tile worked out once
        second_pass = common.traceable(wide.sum_partials_wide_kernel, in_op, second_kind)
        grad_w = weight.new_empty(d)
        second_pass[second_grid](partial, grad_w, programs, d, **second_tile)
        return grad_x, grad_w

    return planned


def as_2d(x):  # (..., D) as (rows, D): a view where the leading dims merge, else a copy
    return x if x.dim() == 2 else x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


SIMPLE_TILE = lesson.SIMPLE_TILE  # the simple kernels' tile


def split(rows, d, device):
    """P, the programs down each D tile of the tuned backward, as lesson.programs_down picks."""
    sms = common.sm_count(device) if device.type == "cuda" else 1
    wanted = common.cdiv(lesson.PROGRAMS_PER_SM * sms, common.cdiv(d, lesson.D_TILE_GUESS))
    return min(max(sms, wanted), rows)  # at most a program per row


def gradients(x, weight, grad_y, needs_input_grad, style, through_op=False):
    """(grad_x, grad_w) of y = x @ weight, None where not needed. With create_graph=True, autograd
    records them, as a torch product and weighted_sum on x.T, for second derivatives. through_op:
    launch the kernels through the backward op, which torch.compile records."""
    need_grad_x, need_grad_w = needs_input_grad[:2]
    x2d, grad_y = as_2d(x), grad_y if grad_y.dim() == 1 else grad_y.reshape(-1)
    if torch.is_grad_enabled() or common.dual_level_open():  # create_graph=True, or forward mode
        grad_x = grad_y[:, None] * weight if need_grad_x else None
        grad_w = weighted_sum(x2d.T, grad_y, style=style) if need_grad_w else None
    elif through_op or torch.compiler.is_compiling():  # the op returns both gradients
        # (compiling: compiled autograd traces an eager forward's backward, which records the op)
        grad_x, grad_w = weighted_sum_backward_op(x2d, weight, grad_y, style)
    else:
        grad_x, grad_w = backward(x2d, weight, grad_y, style, need_grad_x, need_grad_w)
    if grad_x is not None and x.dim() != 2:
        grad_x = grad_x.reshape(x.shape)
    return grad_x, grad_w


class WeightedSum(torch.autograd.Function):
    """The lesson's Function, with a backward that records second derivatives. Its forward takes
    ctx, not a separate setup_context: apply() then skips binding the arguments by
    inspect.signature, which costs the host microseconds each call."""

    @staticmethod
    def forward(ctx, x, weight, style, planned=None):  # planned: weighted_sum's, for the layouts
        setup_context(ctx, (x, weight, style), None)
        ctx.save_for_forward(x, weight)
        return forward(x, weight, style) if planned is None else planned(x, weight)

    @staticmethod
    def backward(ctx, grad_y):
        grads = gradients(*ctx.saved_tensors, grad_y, ctx.needs_input_grad, ctx.style)
        return (*grads, None, None)

    @staticmethod
    def jvp(ctx, tangent_x, tangent_weight, *_):  # forward mode (common.dual_level_open)
        x, weight = ctx.saved_tensors
        return common.sum_present(  # dx @ w + x @ dw, by weighted_sum, which autograd records
            None if tangent_x is None else weighted_sum(tangent_x, weight, ctx.style),
            None if tangent_weight is None else weighted_sum(x, tangent_weight, ctx.style),
        )


def setup_context(ctx, inputs, output):  # what the backward needs: WeightedSum's and the op's
    ctx.save_for_backward(*inputs[:2])
    ctx.style = inputs[2]


def weighted_sum(x, weight, style="tuned", *, out=None):
    """x @ weight over the last dim of x (..., D), weight (D,): a tensor of shape x.shape[:-1], in
    x's dtype; differentiable twice and compilable, or written into out (refused while an input
    requires grad, as PyTorch's out= is). `style` picks the lesson's kernels."""
    if not torch.compiler.is_compiling():  # (eager: below)
        return eager(x, weight, style, out)
    # The op has no jvp: in a dual level Dynamo runs this call eagerly (a graph break).
    if torch.compiler.is_dynamo_compiling() and common.dual_level_open():
        return eager.untraced(x, weight, style, out)
    validate(x, weight, style)
    return common.write_out(weighted_sum_op(x, weight, style), out)


def weighted_sum_eagerly(x, weight, style, out=None):  # the entry's eager path
    planned = kept_forward_plan(x, weight, style)  # validates a layout's first call
    grads = torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)
    if out is None and (grads or common.dual_level_open()):
        return WeightedSum.apply(x, weight, style, planned)
    if out is not None:  # checks out as PyTorch does
        common.kernel_out(out, x.shape[:-1], (x, weight))
    return common.write_out(planned(x, weight), out)  # out, if given, its version bumped


# The entry's eager path: traced by no torch.compile (common.eager_path says why and how)
eager = common.eager_path(weighted_sum_eagerly)


# The registered op, torch.ops.triton_lessons.weighted_sum (common.register_op: which kind of
# op, and why). Its fake gives the output's shape without a kernel, and validates. Its backward
# is a second op, weighted_sum_backward, which returns both gradients (an op returns tensors,
# never None).
@common.register_op("triton_lessons::weighted_sum")
def weighted_sum_op(x: torch.Tensor, weight: torch.Tensor, style: str = "tuned") -> torch.Tensor:
    validate(x, weight, style)
    return forward(x, weight, style, in_op=True)


weighted_sum_op.register_fake(
    lambda x, weight, style="tuned": x.new_empty(validate(x, weight, style))
)


@common.register_op("triton_lessons::weighted_sum_backward")
def weighted_sum_backward_op(
    x2d: torch.Tensor, weight: torch.Tensor, grad_y: torch.Tensor, style: str = "tuned"
) -> tuple[torch.Tensor, torch.Tensor]:
    validate_backward(x2d, weight, grad_y, style)
    return tuple(backward(x2d, weight, grad_y, style, in_op=True))


@weighted_sum_backward_op.register_fake
def _(x2d, weight, grad_y, style="tuned"):
    validate_backward(x2d, weight, grad_y, style)
    return x2d.new_empty(x2d.shape), weight.new_empty(weight.shape)


def op_backward(ctx, grad_y):  # the op's backward, through weighted_sum_backward
    grads = gradients(*ctx.saved_tensors, grad_y, ctx.needs_input_grad, ctx.style, through_op=True)
    return (*grads, None)


weighted_sum_op.register_autograd(op_backward, setup_context=setup_context)


if __name__ == "__main__":  # python 04_weighted_sum/op.py: the op checked on this machine
    calls = {
        "weighted_sum": weighted_sum,
        "torch.ops.triton_lessons.weighted_sum": torch.ops.triton_lessons.weighted_sum,
    }
    # x a view, its rows apart; the additions in y (D), x's gradient (none), weight's (rows)
    cases = [(lambda t: (t(17, 3, 1000).transpose(0, 1), t(1000)), (1000, 1, 51))]
    sys.exit(common.check_op(__doc__, calls, torch.matmul, cases))
