"""matmul_elementwise: lesson 01's vector_k kernel (any_x.py's form) as an op a model can call.

main.py beside this file teaches the kernels; this file makes one of them safe to call from a
model, and adds nothing to what the kernel computes:
- `matmul_elementwise(a, b, *, out=None)` checks its inputs (TypeError or ValueError naming what is
  wrong), writes into `out=` (which may overlap a or b), and records gradients, second ones too;
- `torch.ops.triton_lessons.matmul_elementwise(a, b)` is the same op registered with PyTorch,
  so that `torch.compile(fullgraph=True)` takes it: on a GPU a `torch.library.triton_op`,
  whose kernel the compiled code launches itself; under the interpreter a `custom_op`.

From a script anywhere, load this file by its path (the README shows how). Without a GPU, loading
it sets TRITON_INTERPRET=1 for the process, so that Triton runs the kernels on the CPU.
Run as a script (`python 01_matmul_elementwise/op.py`), it checks the op on this machine (--help).
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
any_x = loader.load_lesson(HERE, "any_x.py")  # vector_k_kernel for int64 offsets and float64
common = lesson.common  # the device, and the checks of out= that every op shares

DTYPES = common.OP_DTYPES  # float16, bfloat16, float32 and float64


def validate(a, b):
    """Raise TypeError or ValueError naming what is wrong unless a @ b can run; return M, N, K."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"a and b must be tensors, got {type(a).__name__} and {type(b).__name__}")
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"a and b must be 2-D, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a is {tuple(a.shape)} and b {tuple(b.shape)}: their K must match")
    if a.dtype != b.dtype or a.dtype not in DTYPES:
        names = [str(dtype).removeprefix("torch.") for dtype in DTYPES]
        raise TypeError(f"a and b must share a dtype of {names}, got {a.dtype}, {b.dtype}")
    common.refuse_negated(a=a, b=b)
    if a.device != b.device or a.device.type != common.DEVICE.type:
        raise ValueError(f"a and b must be on one {common.DEVICE} device: {a.device}, {b.device}")
    if a.shape[0] * b.shape[1] >= 2**31:  # a grid holds at most 2^31 - 1 programs along axis 0
        raise ValueError(f"{a.shape[0] * b.shape[1]:,} outputs: past the 2^31 - 1 of a grid")
    return a.shape[0], b.shape[1], a.shape[1]


def product(a, b, out=None, in_op=False):
    """a @ b by any_x.py's vector_k_any_x_kernel, into out or a new tensor; records no gradient.
    Validates a and b at the first call of their layouts. in_op: from the registered op's body
    (common.traceable), which torch.compile traces: planned each call, as a plan there would
    outlive the traced tensors."""
    if in_op:
        return plan(a, b, in_op=True)(a, b)
    return kept_product_plan(a, b)(a, b, out)


def kept_product_plan(a, b):
    """product()'s plan for these layouts: made, and a and b validated, at their first call."""
    key = common.checked_key(layouts_key, validate, a, b)  # validate(): where a or b is no tensor
    return common.kept_plan(PLANS, key, plan, a, b)


def layouts_key(a, b):
    return (*common.layout(a), *common.layout(b))


# product()'s plans (common.kept_plan: what a plan is; here the sizes, strides and grid), one for
# each layout of a and b: keyed by all that decides the kernel and its arguments but the
# addresses. A plan's launch into a new C is keyed by the same (a Named launcher,
# common/launch.py), so the Launcher skips its own key; C given as out has a layout of its own.
PLANS = {}


def plan(a, b, in_op=False, key=None):
    """A function of (a, b, out=None) of these layouts that returns a @ b, into out where given.
    Raises validate()'s errors. key: the layouts' key, the Launcher's kind for a new C."""
    m, n, k = validate(a, b)
    strides = (*a.stride(), *b.stride())

    def planned(a, b, out=None):
        c = common.kernel_out(out, (m, n), (a, b))  # out, or a new tensor
        kind = key if c is not out else None  # a new C: (N, 1) strides, an aligned address
        launch = common.traceable(any_x.vector_k_any_x_kernel, in_op, kind)
        launch[(m * n,)](a, b, c, n, k, *strides, *c.stride(), **lesson.VECTOR_K_LAUNCH)
        return common.write_out(c, out)  # c, or out holding c (out may overlap a or b)

    return planned


def gradients(ctx, grad_c, matmul):
    """dA = dC @ B.T and dB = A.T @ dC through `matmul`, each None where it is not needed. With
    a differentiable `matmul`, a backward run with create_graph=True records second derivatives."""
    a, b = ctx.saved_tensors
    grad_a = matmul(grad_c, b.T) if ctx.needs_input_grad[0] else None
    grad_b = matmul(a.T, grad_c) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


class MatmulElementwise(torch.autograd.Function):
    """The lesson's Function, with a backward that is itself differentiable."""

    @staticmethod
    def forward(ctx, a, b, planned):  # planned: kept_product_plan(a, b), a and b validated
        ctx.save_for_backward(a, b)
        ctx.save_for_forward(a, b)
        return planned(a, b)

    @staticmethod
    def backward(ctx, grad_c):
        return (*gradients(ctx, grad_c, matmul_elementwise), None)

    @staticmethod
    def jvp(ctx, tangent_a, tangent_b, _):  # forward mode (common.dual_level_open): da @ b + a @ db
        a, b = ctx.saved_tensors
        return common.sum_present(  # by the entry, which autograd records (reverse over forward)
            None if tangent_a is None else matmul_elementwise(tangent_a, b),
            None if tangent_b is None else matmul_elementwise(a, tangent_b),
        )


def matmul_elementwise(a, b, *, out=None):
    """a @ b for a (M, K) and b (K, N) of one float dtype, any strides: differentiable, or
    written into out (refused while an input requires grad, as PyTorch's out= is)."""
    if not torch.compiler.is_compiling():  # (eager: below)
        return eager(a, b, out)
    # The op has no jvp: in a dual level Dynamo runs this call eagerly (a graph break).
    if torch.compiler.is_dynamo_compiling() and common.dual_level_open():
        return eager.untraced(a, b, out)
    validate(a, b)  # its errors, not the registered op's fake tensors'
    return common.write_out(matmul_elementwise_op(a, b), out)


def matmul_elementwise_eagerly(a, b, out=None):  # the entry's eager path
    # getattr: a or b may be no tensor, which product's validate() then names
    wants_grad = getattr(a, "requires_grad", False) or getattr(b, "requires_grad", False)
    if out is None and (wants_grad and torch.is_grad_enabled() or common.dual_level_open()):
        # the plan first: it names bad input (torch.func's tensors too) before the Function
        return MatmulElementwise.apply(a, b, kept_product_plan(a, b))
    return product(a, b, out)  # validates a and b


# The entry's eager path: traced by no torch.compile (common.eager_path says why and how)
eager = common.eager_path(matmul_elementwise_eagerly)


# The registered op, torch.ops.triton_lessons.matmul_elementwise (common.register_op: which kind
# of op, and why). register_fake gives the output's shape and dtype without running the kernel,
# and raises the entry's errors; the op's backward calls the op again, so it has second
# derivatives too.
@common.register_op("triton_lessons::matmul_elementwise")
def matmul_elementwise_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return product(a, b, in_op=True)  # validates a and b


matmul_elementwise_op.register_fake(lambda a, b: a.new_empty(validate(a, b)[:2]))
matmul_elementwise_op.register_autograd(
    lambda ctx, grad_c: gradients(ctx, grad_c, matmul_elementwise_op),
    setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs),
)


if __name__ == "__main__":  # python 01_matmul_elementwise/op.py: the op checked on this machine
    calls = {
        "matmul_elementwise": matmul_elementwise,
        "torch.ops.triton_lessons.matmul_elementwise": torch.ops.triton_lessons.matmul_elementwise,
    }
    # b a transposed view; the additions in C's values (K), in a's gradient (N) and b's (M)
    cases = [(lambda t: (t(17, 40), t(5, 40).T), (40, 5, 17))]
    sys.exit(common.check_op(__doc__, calls, torch.matmul, cases))
