"""A fused matmul: lesson 02's Part 3, the kernel op.py runs.

What you learn: four changes that take main.py's matmul_kernel
(Parts 1 and 2: read them first) to a kernel that takes any
input a model hands it, and fuses a model's next step. Each
change is a section below; then comes the kernel, each change
marked where it acts:

- (int64) offsets past 2^31, for matrices that large;
- (step) pointers that step along K;
- (precision) float32 as torch's setting asks, and float64;
- (epilogue) a bias and GELU applied before the store.

op.py, beside this file, runs this kernel in a model, and
persistent.py (Part 4) calls its epilogue.
"""

import sys
from pathlib import Path

import torch

# The repository's root holds common and lesson_loader.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (before triton, which it configures)
import lesson_loader  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# main.py beside this file: Parts 1 and 2.
lesson = lesson_loader.load_lesson(Path(__file__).resolve().parent)
grouped_tile, tile_grid = lesson.grouped_tile, lesson.tile_grid


# ### (int64) Offsets past 2^31
# main.py's offsets are int32, as tl.arange's values are. An
# int32 wraps around past 2^31, as rows * stride_am does in an
# A of more than 2^31 elements; main.py's wrappers refuse such
# inputs. This kernel turns rows, cols and ks into int64 first,
# so its offsets are int64.
#
# ### (step) Pointers that step along K
# main.py's kernels compute every offset again at each step.
# In int64 that costs more instructions. So this kernel
# computes the pointers for k = 0 once, then moves them
# BLOCK_K columns along at each step:
#
#     a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] ...
#     for k in range(0, K, BLOCK_K):
#         ...  # load, tl.dot
#         a_ptrs += BLOCK_K * stride_ak
#
# The mask on k then reads ks < K - k: the same test as the
# simple kernel's k + ks < K, for pointers already at column k.
#
# ### (precision) Float32 and float64
# TF32 is a format with float32's range but 10 bits of
# mantissa: faster on tensor cores, slightly less exact.
# main.py's kernels always round float32 inputs to TF32.
# PyTorch does so only where set_float32_matmul_precision
# allows it. The constexpr INPUT_PRECISION passes PyTorch's
# choice to tl.dot: "tf32" rounds, "ieee" does not. For
# float64 inputs (and so a float64 C), acc is float64 and
# tl.dot adds in float64.
def input_precision(dtype):
    """tl.dot's input_precision for dtype, as torch.matmul's."""
    tf32 = torch.get_float32_matmul_precision() != "highest"
    return "tf32" if dtype == torch.float32 and tf32 else "ieee"


# ### (epilogue) Bias and GELU, fused into the store
# The epilogue is the code after the K loop, which writes C.
# A model's layer computes GELU(A @ B + bias). In PyTorch, the
# matmul writes P = A @ B + bias to memory; then a second
# kernel reads P back and writes GELU(P). Here the kernel adds
# the bias and applies GELU to acc, in registers, and writes C
# once: one pass over memory fewer.
#
# GELU(P) = P * Φ(P), where Φ is the normal distribution's
# CDF. GPT-2 approximates Φ(P) by (1 + tanh(z)) / 2, where
# z = √(2/π) (P + 0.044715 P^3); and (1 + tanh(z)) / 2 equals
# sigmoid(2z), which the kernel computes, with y = 2z.
@triton.jit
def add_bias(acc, bias_ptr, cols, N):
    """acc + bias[cols] on every row; acc if bias_ptr is None."""
    # Triton compiles a separate version of the kernel for a
    # None argument. So `bias_ptr is not None` is known while
    # compiling: the `if` is decided then, and costs nothing.
    if bias_ptr is not None:
        bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0)
        acc += bias.to(acc.dtype)[None, :]
    return acc


@triton.jit
def activate(acc, ACTIVATION: tl.constexpr):  # None, "gelu_tanh"
    if ACTIVATION == "gelu_tanh":
        # y = 2z; 1.5957... is 2√(2/π)
        y = 1.5957691216057308 * (acc + 0.044715 * acc * acc * acc)
        acc = acc * tl.sigmoid(y)
    return acc


# The kernel: main.py's matmul_kernel, tuned as Part 2's
# (tune) says, with the four changes marked. The key adds
# INPUT_PRECISION: a TF32 dot wants other tiles than an exact
# one, and an exact dot's pick can overflow shared memory in TF32.
@triton.autotune(configs=lesson.CONFIGS, key=["M", "N", "K", "INPUT_PRECISION"])
@triton.jit
def fused_matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    bias_ptr,  # (epilogue): None for no bias
    M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
    stride_cm, stride_cn,
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
    ks = tl.arange(0, BLOCK_K).to(tl.int64)  # (int64): all three
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
        # (step) The step is an int64 too. For A = x.T, a
        # transposed view, stride_ak is M: 64 * M passes 2^31
        # once M reaches 2^25.
        a_ptrs += tl.cast(BLOCK_K, tl.int64) * stride_ak
        b_ptrs += tl.cast(BLOCK_K, tl.int64) * stride_bk
    c_offsets = rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    acc = add_bias(acc, bias_ptr, cols, N)  # (epilogue)
    c = activate(acc, ACTIVATION).to(c_dtype)
    tl.store(c_ptr + c_offsets, c, mask=c_mask)


def matmul_fused(a, b, bias=None, activation=None):
    """a @ b by fused_matmul_kernel, + bias and activated if
    asked: main.py's matmul_tuned, for any size and float64."""
    (M, K), N = a.shape, b.shape[1]
    assert K == b.shape[0], "a's columns must match b's rows"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    a, b = common.dot_inputs(a, b)  # on a CPU: bfloat16 as float32
    strides = (*a.stride(), *b.stride(), *c.stride())
    fused_matmul_kernel[tile_grid(M, N)](
        a, b, c, bias, M, N, K, *strides,
        INPUT_PRECISION=input_precision(c.dtype), ACTIVATION=activation,
    )  # fmt: skip
    return c


def check_epilogue(a, b, fn=None, name="fused"):
    """fn(a, b, bias, "gelu_tanh") (matmul_fused unless given)
    against PyTorch's GELU(a @ b + bias) in float64 (GELU's
    slope stays under 1.2, so it grows a rounding error by 1.2
    at most)."""
    bias = torch.randn(b.shape[1], device=a.device).to(a.dtype)
    a64, b64, bias64 = a.double(), b.double(), bias.double()
    p = a64 @ b64 + bias64
    expected = torch.nn.functional.gelu(p, approximate="tanh")
    magnitude = 1.2 * (a64.abs() @ b64.abs() + bias64.abs())
    tf32 = common.TF32_ROUNDOFF if input_precision(a.dtype) == "tf32" else 0.0
    with common.uninitialized_memory_is_nan():
        c = (fn or matmul_fused)(a, b, bias, "gelu_tanh")
    what = f"{name} + bias + GELU"
    common.assert_close(c, expected, magnitude, a.shape[1], what, tf32)


VARIANTS = {**lesson.VARIANTS, "fused": matmul_fused}


# ## Timing (the harness: skip it on a first read)
def variants_for(a, b):
    """The VARIANTS that take a @ b: fused takes every dtype."""
    return lesson.variants_for(a, b) | {"fused": matmul_fused}


def benchmark(m, n, k, dtype="float16"):
    """main.py's timing table, with the fused kernel's row."""
    return lesson.benchmark(m, n, k, dtype, sys.modules[__name__])


SWEEP = lesson.SWEEP  # `make bench` times main.py's cases


def main(argv=None):
    return lesson.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
