"""blocked_sum: lesson 03's column sums as an op a model can call.

main.py beside this file teaches the kernels, and any_x.py (its Part 3) gives the split kernel
float64 sums, int64 offsets and one compile for every M; this file makes them safe to call from a
model, and adds nothing to what they compute (it tunes them in less time than the lesson does):
- `blocked_sum(x, style="tuned", *, out=None)` checks its inputs (TypeError or ValueError naming
  what is wrong), writes into `out=` (which may overlap x), and records gradients, second ones
  too; `style` picks the lesson's kernel: "simple", "one_d", "tuned" or "block_ptr" (where it
  runs). The lesson's "split" and "split_ahead" are steps of "tuned" at a fixed tile, not styles;
- `torch.ops.triton_lessons.blocked_sum(x, style)` is the same op registered with PyTorch, so
  that `torch.compile(fullgraph=True)` takes it: on a GPU a `torch.library.triton_op`, whose
  kernels the compiled code launches itself; under the interpreter a `custom_op`.

From a script anywhere, load this file by its path (the README shows how, for lesson 01's op).
Without a GPU, loading it sets TRITON_INTERPRET=1 for the process, so that Triton runs the kernels
on the CPU.
Run as a script (`python 03_blocked_sum/op.py`), it checks the op on this machine (--help).
"""

import importlib.util
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
appendix = loader.load_lesson(HERE, "block_ptr.py")  # the lesson's block-pointer appendix
any_x = loader.load_lesson(HERE, "any_x.py")  # Part 3: the split kernel for any x, any M
common = lesson.common  # the device, and the checks of out= that every op shares
# triton from the lesson, which imported it after common set TRITON_INTERPRET=1 on a CPU:
# imported before that, Triton's own @triton.jit helpers (tl.sum) would not run interpreted.
triton = lesson.triton

DTYPES = common.OP_DTYPES  # float16, bfloat16, float32 and float64
# The styles that launch the lesson's own kernels, kept simple: float32 sums, int32 offsets. The
# others launch any_x.py's kernel (Part 3): float64 sums for float64, int64 offsets, any M.
FLOAT32_STYLES = ("simple", "one_d", "block_ptr")
FIRST_KERNELS = ("simple", "one_d")  # a program per 64 columns, no split


def validate(x, style="tuned"):
    """N, or TypeError or ValueError naming the problem where blocked_sum cannot run."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in DTYPES:
        names = ", ".join(str(dtype).removeprefix("torch.") for dtype in DTYPES)
        raise TypeError(f"x is {x.dtype}; expected one of {names}")
    if x.dim() != 2:
        raise ValueError(f"x has shape {tuple(x.shape)}: expected a 2-D (M, N) matrix")
    common.refuse_negated(x=x)
    if x.device.type != common.DEVICE.type:
        raise ValueError(f"x is on {x.device}: it must be on {common.DEVICE.type}")
    if style not in STYLES:
        unavailable = isinstance(style, str) and style in appendix.UNAVAILABLE
        why = appendix.UNAVAILABLE[style] if unavailable else f"not one of {STYLES}"
        raise ValueError(f"style {style!r}: {why}")
    if style in FLOAT32_STYLES and x.dtype == torch.float64:
        raise TypeError(f"style {style!r} sums in float32 only: use 'tuned' for float64")
    if style in FLOAT32_STYLES and (span := common.elements_spanned(x)) > 2**31:
        raise ValueError(f"style {style!r} keeps offsets in int32, and x spans {span} "
                         "elements (over 2^31): use 'tuned'")  # fmt: skip
    # A program's first row or column, and a chunk's end, are int32 sums and products: at
    # 2^31 - 1 rows the last chunk's end wrapped around, and its rows went unsummed (an H200).
    if max(x.shape) >= 2**30:
        shape = tuple(x.shape)
        raise ValueError(f"x has shape {shape}: the kernels number rows and columns in int32, "
                         "with room for a tile past the end up to 2^30 - 1 of each")  # fmt: skip
    return x.shape[1]  # N, the length of the output


# The lesson tunes as Triton does by default: every config, each timed for 125 ms, at each new key.
# A model wants its first calls short: the op's kernels drop the configs whose tile overhangs x,
# time each for 25 ms, and keep the winner on disk (cache_results) for the next process.
def prune_configs(configs, named_args, **kwargs):
    """Called by the autotuner before it times, with the configs and the arguments by name: the
    tiles that fit in N and in a chunk, or the smallest."""
    width = triton.next_power_of_2(named_args["N"])
    height = triton.next_power_of_2(named_args["rows_per_chunk"])
    fit = [c for c in configs if c.kwargs["BLOCK_N"] <= width and c.kwargs["BLOCK_M"] <= height]
    return fit or [min(configs, key=lambda c: c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"])]


tune = common.op_autotune(lesson.CONFIGS, ["N", "rows_per_chunk"], prune_configs)

# The kernel each style launches first (the lesson's VARIANTS list the styles that run here).
column_sum_kernel = tune(any_x.split_any_x_kernel)
block_ptr_kernel = tune(appendix.column_sum_block_ptr_kernel.fn)  # .fn: under its autotuner
KERNELS = {
    "simple": lesson.simple_column_sum_kernel,
    "one_d": lesson.one_d_column_sum_kernel,
    "tuned": column_sum_kernel,
    "block_ptr": block_ptr_kernel,
}
STYLES = [style for style in KERNELS if style in appendix.VARIANTS]  # block_ptr where it runs


def forward(x, style, in_op=False):
    """x.sum(0) by the lesson's kernels of `style`, launched as its wrappers launch them; records
    no gradient. Validates x at its layout's first call. in_op: from the registered op's body
    (common.traceable), which torch.compile traces and which validates x itself: planned each
    call, as a plan there would outlive the traced x."""
    if in_op:
        return plan(x, style, in_op=True)(x)
    return kept_forward_plan(x, style)(x)


def kept_forward_plan(x, style):
    """forward()'s plan for x's layout and style: made, and x validated, at their first call."""
    key = common.checked_key(forward_key, validate, x, style)
    return common.kept_plan(PLANS, key, plan, x, style)


def forward_key(x, style):  # the style by its index: one no dict could key (a list) raises here
    return (*common.layout(x), STYLES.index(style))


# forward()'s plans (common.kept_plan: what a plan is; here the checks too), one for each layout
# of x: keyed by all that decides the kernels and their arguments but x's address. A later call
# of a layout skips validate(), as 01's and 02's entries do. Its launches are keyed by the
# same (a Named launcher, common/launch.py), so the Launcher skips its own key for each.
PLANS = {}


def plan(x, style, in_op=False, key=None):
    """A function of an x of this x's layout that returns x.sum(0) by the kernels of `style`.
    Raises validate()'s errors, but in_op (the op's body has validated x). key: the layout's key,
    the Launcher's kind for its launches."""
    if not in_op:
        validate(x, style)
    (M, N), sum_dtype = x.shape, torch.promote_types(x.dtype, torch.float32)
    if x.numel() == 0:  # a sum of no rows is 0; no launch, nothing for an autotuner to time
        return lambda x: x.new_zeros(N)
    if style in FIRST_KERNELS:  # lesson.column_sums_simple: a program per 64 columns
        grid = (common.cdiv(N, 64),)

        def first_kernel_sums(x):
            out = x.new_empty(N)
            kernel = common.traceable(KERNELS[style], in_op, key)
            kernel[grid](x, out, M, N, *x.stride(), BLOCK_M=16, BLOCK_N=64)
            return out

        return first_kernel_sums
    # any_x.column_sums_any_x (a size torch.compile traces is fixed to its value)
    splits, rows_per_chunk = any_x.plan_splits(int(M), int(N), x.device)
    grid = lambda meta: (common.cdiv(N, meta["BLOCK_N"]), splits)  # noqa: E731
    # The second pass launches other arguments: its own kind, whichever kernel a style runs first.
    second_kind = None if key is None else (key, "second pass")
    second_grid, second_tile = any_x.sum_partials_tile(splits, N)

    def split_sums(x):
        out = x.new_empty(N)
        partial = out if splits == 1 else x.new_empty((splits, N), dtype=sum_dtype)
        kernel = common.traceable(KERNELS[style], in_op, key)
        kernel[grid](x, partial, M, N, *x.stride(), rows_per_chunk)
        if splits > 1:  # any_x.sum_partials: partial as one chunk, by any_x.py's kernel
            second_pass = common.traceable(any_x.split_any_x_kernel, in_op, second_kind)
            args = (partial, out, splits, N, *partial.stride(), splits)  # its rows: a chunk
            second_pass[second_grid](*args, **second_tile)
        return out

    return split_sums


def setup_context(ctx, inputs, output):  # what the backward needs: BlockedSum's and the op's
    ctx.x_shape = inputs[0].shape


class BlockedSum(torch.autograd.Function):
    """The lesson's Function, with a style: grad_x = grad_out.expand(M, N), a view, recorded by
    autograd like any torch op, so second derivatives work. Its forward takes ctx, not a
    separate setup_context: apply() then skips binding the arguments by inspect.signature,
    which costs the host microseconds each call."""

    @staticmethod
    def forward(ctx, x, style, planned=None):  # planned: blocked_sum's, for x's layout
        setup_context(ctx, (x, style), None)
        ctx.style = style
        return forward(x, style) if planned is None else planned(x)

    @staticmethod
    def backward(ctx, grad_out):  # for x, style, planned (the op has no planned: autograd
        # takes a None past the last input)
        return grad_out.expand(ctx.x_shape), None, None

    @staticmethod
    def jvp(ctx, tangent_x, *_):  # forward mode (common.dual_level_open): the tangent's sum
        return blocked_sum(tangent_x, ctx.style)  # which autograd records


def blocked_sum(x, style="tuned", *, out=None):
    """x.sum(0) for a 2-D float x of any strides, in x's dtype (16-bit x adds in float32):
    differentiable and compilable, or written into out. `style` picks the lesson's variant."""
    if not torch.compiler.is_compiling():  # (eager: below)
        return eager(x, style, out)
    # The op has no jvp: in a dual level Dynamo runs this call eagerly (a graph break).
    if torch.compiler.is_dynamo_compiling() and common.dual_level_open():
        return eager.untraced(x, style, out)
    validate(x, style)
    return common.write_out(blocked_sum_op(x, style), out)


def blocked_sum_eagerly(x, style, out=None):  # the entry's eager path
    planned = kept_forward_plan(x, style)  # validates x at its layout's first call
    if out is None and (torch.is_grad_enabled() and x.requires_grad or common.dual_level_open()):
        return BlockedSum.apply(x, style, planned)
    if out is not None:  # checks out as PyTorch's out= does
        common.kernel_out(out, x.shape[1:], (x,))
    return common.write_out(planned(x), out)  # out, if given, with its version bumped


# The entry's eager path: traced by no torch.compile (common.eager_path says why and how)
eager = common.eager_path(blocked_sum_eagerly)


# The registered op, torch.ops.triton_lessons.blocked_sum (common.register_op: which kind of op,
# and why). Its fake gives the output's shape without a kernel, and validates.
@common.register_op("triton_lessons::blocked_sum")
def blocked_sum_op(x: torch.Tensor, style: str = "tuned") -> torch.Tensor:
    validate(x, style)
    return forward(x, style, in_op=True)


blocked_sum_op.register_fake(lambda x, style="tuned": x.new_empty(validate(x, style)))
blocked_sum_op.register_autograd(BlockedSum.backward, setup_context=setup_context)


if __name__ == "__main__":  # python 03_blocked_sum/op.py: the op checked on this machine
    calls = {
        "blocked_sum": blocked_sum,
        "torch.ops.triton_lessons.blocked_sum": torch.ops.triton_lessons.blocked_sum,
    }
    # x every other column of a tensor; the additions in the sums (rows) and x's gradient (none)
    cases = [(lambda t: (t(1000, 34)[:, ::2],), (1000, 1))]
    sys.exit(common.check_op(__doc__, calls, lambda x: x.sum(0), cases))
