"""Lesson 01's second part (optional): the kernel op.py runs.

What you learn: one change, (any x), that makes main.py's
vector_k_kernel (read it first) take any input a model hands
it. The kernel below is vector_k_kernel with the change marked
on each line it touches:
- int64 offsets, for A, B or C of 2^31 elements or more;
- float64 sums for a float64 C.

Worked example: an int32 holds numbers up to 2^31 - 1 =
2147483647. For A of 65536 x 32768 (2^31 elements), row 65535
starts at offset 65535 * 32768 = 2147450880, and its last
element lies at 2147483647. One element more, and an int32
offset wraps around to -2147483648: a load there would read
memory before A, and give a wrong answer or a crash.
"""

import argparse
import sys
from pathlib import Path

import torch

# The repository's root holds common and lesson_loader.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (before triton: sets TRITON_INTERPRET)
import lesson_loader  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# main.py beside this file, whose launch and check this reuses.
lesson = lesson_loader.load_lesson(Path(__file__).resolve().parent)


# ## (any x) Int64 offsets and float64 sums
# The program id, tl.arange and the int arguments below 2^31
# are int32, and so are their products: turned into int64
# before they multiply a stride, the offsets reach any element.
#
# A float32 sum keeps 24 bits of each product; a float64 C has
# 53. So for a float64 C the kernel sums in float64. Python in a
# kernel that looks only at dtypes or constexprs, as the
# `... if ... else ...` below does, runs once, while Triton
# compiles the kernel: the GPU never runs it. A loop over a
# run-time value, such as range(0, K, BLOCK_K), runs on the GPU.
@triton.jit
def vector_k_any_x_kernel(
    a_ptr, b_ptr, c_ptr, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_K: tl.constexpr,  # how many k a step, a power of 2
):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)  # (any x) int64 offsets
    row = pid // N
    col = pid % N
    # (any x) float64 sums for a float64 C
    c_dtype = c_ptr.dtype.element_ty
    acc_dtype = tl.float64 if c_dtype == tl.float64 else tl.float32
    offs_k = tl.arange(0, BLOCK_K).to(tl.int64)  # (any x)
    acc = tl.zeros((BLOCK_K,), dtype=acc_dtype)  # (any x)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k  # the BLOCK_K values of k this step
        in_k = k < K  # where False, load nothing and take 0
        # A pointer plus a block of offsets is a block of pointers,
        # and tl.load of it gives a block of values.
        a_ptrs = a_ptr + row * stride_am + k * stride_ak
        b_ptrs = b_ptr + k * stride_bk + col * stride_bn
        a = tl.load(a_ptrs, mask=in_k, other=0.0)
        b = tl.load(b_ptrs, mask=in_k, other=0.0)
        acc += a.to(acc_dtype) * b.to(acc_dtype)  # (any x)
    c = tl.sum(acc, axis=0).to(c_dtype)
    tl.store(c_ptr + row * stride_cm + col * stride_cn, c)


def vector_k_any_x(a, b):
    """a @ b by vector_k_any_x_kernel: main.py's vector_k, for
    any size and float64 too."""
    assert a.shape[1] == b.shape[0], "K must match"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    strides = (*a.stride(), *b.stride(), *c.stride())
    launch = lesson.VECTOR_K_LAUNCH
    vector_k_any_x_kernel[(M * N,)](a, b, c, N, K, *strides, **launch)
    return c


VARIANTS = {"any_x": vector_k_any_x}


# ## The check (the harness: skip it on a first read)
def main(argv=None):
    """main.py's check of this file's kernel, in every dtype."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    size = 16 if common.INTERPRETED else 1024  # the interpreter is slow
    about = "M = N = K of the product checked, in each float dtype"
    parser.add_argument("--size", type=int, default=size, help=about)
    n = parser.parse_args(argv).size
    if n < 0:
        parser.error("--size must not be negative")
    print(common.describe_run())
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        lesson.check_variants(VARIANTS, n, n, n, dtype, transpose_b=True)
    print(f"check passed: any_x at {n}x{n}x{n}, float16 to float64")
    return 0


if __name__ == "__main__":
    sys.exit(main())
