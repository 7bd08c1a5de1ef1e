"""Lesson 01: the lesson's kernels, wrappers and Function (main.py), then the op a model calls
(op.py): its checks, out=, gradients, the registered op and torch.compile."""

import pytest
import torch

import support
from support import common

ex = support.load("01_matmul_elementwise")
ax = support.load_beside("01_matmul_elementwise", "any_x.py")  # the kernel op.py runs
op = support.load_op("01_matmul_elementwise")
OP = torch.ops.triton_lessons.matmul_elementwise

VARIANT_NAMES = list(ex.VARIANTS)


def only(variant):
    """The one-entry dict of VARIANTS that ex.check takes."""
    return {variant: ex.VARIANTS[variant]}


def float64_product(a, b):
    """a @ b in float64 and the same on absolute values: what common.assert_close compares with."""
    a64, b64 = a.detach().double(), b.detach().double()
    return a64 @ b64, a64.abs() @ b64.abs()


def randn(*shape, **kwargs):
    return torch.randn(*shape, device=common.DEVICE, **kwargs)


def nan(*shape, dtype=torch.float32):
    return torch.full(shape, float("nan"), dtype=dtype, device=common.DEVICE)


# ## The lesson: main.py


def test_variants_are_the_lessons_two():
    assert VARIANT_NAMES == ["scalar", "vector_k"]
    assert not hasattr(ex, "UNAVAILABLE")  # plain pointer arithmetic, which every Triton runs


@pytest.mark.parametrize("variant", VARIANT_NAMES)
@pytest.mark.parametrize(
    "m, n, k",
    [
        (1, 1, 1),
        (1, 17, 1),  # M = 1 and K = 1
        (17, 1, 17),  # N = 1
        (3, 5, 1000),  # K a multiple of neither 32 nor 64: the masked tail
        (2, 3, 1001),
        (4, 4, 64),  # K a multiple of BLOCK_K: no tail
    ],
)
def test_sizes(variant, m, n, k):
    ex.check_variants(only(variant), m, n, k, torch.float32)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_a_thousand_outputs(variant):
    ex.check_variants(only(variant), 1000, 1, 3, torch.float32)
    ex.check_variants(only(variant), 1, 1001, 2, torch.float32)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_dtypes(variant, dtype):
    ex.check_variants(only(variant), 5, 7, 300, dtype)


def test_any_x_takes_float64_and_the_lessons_kernels_refuse_it():
    # main.py's kernels sum in float32; any_x.py's, which op.py runs, sums a float64 C in float64.
    ex.check_variants(ax.VARIANTS, 5, 7, 300, torch.float64)
    for fn in ex.VARIANTS.values():
        with pytest.raises(AssertionError, match="float32 sums: see any_x.py"):
            fn(randn(3, 4, dtype=torch.float64), randn(4, 2, dtype=torch.float64))


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_the_lessons_kernels_refuse_offsets_past_2_to_31(variant):
    # Their offsets are int32: the wrappers refuse a tensor of 2^31 elements or more before a
    # launch could wrap them around (meta tensors: shapes with no memory behind them).
    a = torch.empty(2**16, 2**15, dtype=torch.float16, device="meta")
    b = torch.empty(2**15, 1, dtype=torch.float16, device="meta")
    with pytest.raises(AssertionError, match="int32 offsets: see any_x.py"):
        ex.VARIANTS[variant](a, b)
    with pytest.raises(AssertionError, match="int32 offsets"):  # a transposed view reaches as far
        ex.VARIANTS[variant](b.T, a.T)


def test_any_x_main_runs(capsys):
    assert ax.main(["--size", "6"]) == 0
    assert "check passed: any_x at 6x6x6, float16 to float64" in capsys.readouterr().out


def test_main_offers_the_dtypes_every_variant_checks():
    assert list(ex.DTYPES) == ["float16", "bfloat16", "float32"]


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_half_precision_accumulates_in_float32(variant):
    # 2048 products 1 * (1 + 2^-10): the exact sum 2050 is a float16 number, and float32 adds up
    # these terms exactly. A float16 running sum drops the 2^-10 of each term once it passes 2.
    a = torch.ones(1, 2048, dtype=torch.float16, device=common.DEVICE)
    b = torch.full((2048, 1), 1 + 2.0**-10, dtype=torch.float16, device=common.DEVICE)
    assert ex.VARIANTS[variant](a, b).item() == 2050.0


@pytest.mark.parametrize("fn", [ax.vector_k_any_x, op.matmul_elementwise], ids=["any_x", "entry"])
def test_float64_accumulates_in_float64(fn):
    # 1 + 1e-10 - 1: a float32 sum loses the 1e-10 (its spacing near 1 is 1.2e-7).
    a = torch.tensor([[1.0, 1e-10, -1.0]], dtype=torch.float64, device=common.DEVICE)
    b = torch.ones(3, 1, dtype=torch.float64, device=common.DEVICE)
    assert fn(a, b).item() == pytest.approx(1e-10, rel=1e-6)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_transposed_views(variant, transpose_a, transpose_b):
    ex.check_variants(only(variant), 4, 6, 37, torch.float32, transpose_a, transpose_b)


@pytest.mark.parametrize("fn", [*ex.VARIANTS.values(), op.matmul_elementwise])
def test_sliced_views(fn):
    # Operands whose columns are every step-th of a wider tensor.
    for dtype, step, transpose_a in ((torch.float32, 3, False), (torch.float16, 2, True)):
        a = common.random_matrix(5, 40 * step, dtype, transpose_a)[:, ::step]
        b = common.random_matrix(40, 3 * step, dtype)[:, ::step]
        with common.uninitialized_memory_is_nan():
            c = fn(a, b)
        common.assert_close(c, *float64_product(a, b), 40, f"sliced {dtype}")


@pytest.mark.parametrize("fn", [*ex.VARIANTS.values(), op.matmul_elementwise])
def test_views_are_not_copied(fn, monkeypatch):
    w, h = randn(2, 4), randn(3, 4)

    def no_copy(*args, **kwargs):
        raise AssertionError("the wrapper copied an input")

    monkeypatch.setattr(torch.Tensor, "contiguous", no_copy)
    out = fn(h, w.T)
    monkeypatch.undo()
    torch.testing.assert_close(out, h @ w.T)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_broadcast_views_with_stride_zero(variant):
    a = randn(1, 6).expand(4, 6)  # every row the same memory
    b = randn(6, 1).expand(6, 3)
    torch.testing.assert_close(ex.VARIANTS[variant](a, b), a @ b)


def test_h_at_w_transposed_example():
    # The docstring's layer: O = H @ W.T is (3, 2), W.T a view with strides (1, 4).
    w, h = randn(2, 4), randn(3, 4)
    assert w.T.stride() == (1, 4)
    for fn in (*ex.VARIANTS.values(), op.matmul_elementwise):
        out = fn(h, w.T)
        assert out.shape == (3, 2)
        torch.testing.assert_close(out, h @ w.T)


def test_worked_example_of_the_docstring():
    # A 2x3 and B 3x2 row-major: program 3 stores a3*b1 + a4*b3 + a5*b5 at C[1, 1].
    a = torch.arange(6.0, device=common.DEVICE).reshape(2, 3)
    b = torch.arange(6.0, device=common.DEVICE).reshape(3, 2)
    assert a.stride() == (3, 1) and b.stride() == (2, 1)
    assert b.T.stride() == (1, 2)  # the docstring's W.T: strides (1, 3) for a 2x3 W
    for fn in ex.VARIANTS.values():
        assert fn(a, b)[1, 1].item() == 3 * 1 + 4 * 3 + 5 * 5


@pytest.mark.parametrize("fn", [*ex.VARIANTS.values(), op.matmul_elementwise])
def test_k_zero_writes_zeros(fn):
    with common.uninitialized_memory_is_nan():
        c = fn(randn(3, 0), randn(0, 4))
    assert torch.equal(c, torch.zeros(3, 4, device=common.DEVICE))


@pytest.mark.parametrize("fn", [*ex.VARIANTS.values(), op.matmul_elementwise])
@pytest.mark.parametrize("m, n, k", [(0, 3, 4), (3, 0, 4), (0, 0, 0)])
def test_empty_outputs(fn, m, n, k):
    assert fn(randn(m, k), randn(k, n)).shape == (m, n)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_variants_assert_that_k_matches(variant):
    # The tutorials' one-line assert: a wrong K would read past the end of b.
    with pytest.raises(AssertionError, match="K must match"):
        ex.VARIANTS[variant](randn(3, 4), randn(5, 2))


def test_reference_is_torch_matmul():
    a = torch.randn(3, 5, dtype=torch.float64)
    b = torch.randn(5, 2, dtype=torch.float64)
    assert torch.equal(ex.reference(a, b), a @ b)


def test_check_catches_a_wrong_kernel():
    wrong = {"wrong": lambda a, b: (a @ b).T.contiguous().T * 1.01}
    with pytest.raises(AssertionError, match="wrong 4x4x4"):
        ex.check_variants(wrong, 4, 4, 4)
    forgets = {"forgets": lambda a, b: torch.empty(a.shape[0], b.shape[1], device=a.device)}
    with pytest.raises(AssertionError, match="forgets.*got nan"):
        ex.check_variants(forgets, 2, 2, 3)  # torch.empty holds NaN inside check


def lesson_grad_inputs(dtype=torch.float32):
    a = common.random_matrix(3, 4, dtype).requires_grad_()
    b = common.random_matrix(4, 2, dtype, transposed=True).requires_grad_()
    return a, b


def test_lesson_function_gradients():
    # float32 (the lesson's kernels refuse float64): against float64, not by gradcheck
    a, b = lesson_grad_inputs()
    grad = randn(3, 2)
    ex.MatmulElementwise.apply(a, b).backward(grad)
    common.assert_close(a.grad, *float64_product(grad, b.T), 2, "lesson grad of a")
    common.assert_close(b.grad, *float64_product(a.T, grad), 3, "lesson grad of b")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_check_gradients(dtype):
    ex.check_gradients(5, 7, 300, dtype)
    ex.check_gradients(1, 17, 1, dtype)


def test_check_gradients_catches_a_wrong_backward(monkeypatch):
    backward = ex.MatmulElementwise.backward

    def off_by_one_percent(ctx, grad_c):
        return tuple(1.01 * g for g in backward(ctx, grad_c))

    monkeypatch.setattr(ex.MatmulElementwise, "backward", staticmethod(off_by_one_percent))
    with pytest.raises(AssertionError, match="dA"):
        ex.check_gradients(4, 3, 5)


def test_lesson_function_refuses_a_second_derivative():
    # once_differentiable: an error, never a second derivative of zero (op.py's has one).
    a, b = lesson_grad_inputs()
    c = ex.MatmulElementwise.apply(a, b)
    grad_c = torch.ones_like(c, requires_grad=True)  # as gradgradcheck passes it
    (grad_b,) = torch.autograd.grad(c, b, grad_c, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        grad_b.sum().backward()


def test_lesson_function_launches_the_kernel_directly(monkeypatch):
    # Forward and backward reach vector_k_kernel[grid] through vector_k alone.
    calls = []
    original = ex.vector_k
    monkeypatch.setattr(ex, "vector_k", lambda *args: calls.append(args) or original(*args))
    a, b = lesson_grad_inputs()
    ex.MatmulElementwise.apply(a, b).sum().backward()
    assert len(calls) == 3  # C, dA, dB


@pytest.mark.parametrize("flags, layout", [([], "b=W.T"), (["--b-row-major"], "b row-major")])
def test_main_runs(capsys, flags, layout):
    assert ex.main(["--m", "3", "--n", "2", "--k", "5", "--dtype", "float16", *flags]) == 0
    printed = capsys.readouterr().out
    assert "scalar(A, B) = [[10.0, 13.0], [28.0, 40.0]] = A @ B" in printed  # the docstring's
    assert "check passed: both variants and dA, dB at 3x2x5" in printed
    for name in [*VARIANT_NAMES, "vector_k_kernel[grid]", "torch"]:
        assert f"3x2x5 float16 {layout}  {name} " in printed


def test_cli_rejects_negative_sizes_and_shows_defaults(capsys):
    for flag in ("--m", "--n", "--k"):
        with pytest.raises(SystemExit) as exit_info:
            ex.main([flag, "-3"])
        assert exit_info.value.code == 2 and "must not be negative" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        ex.main(["--help"])
    assert exit_info.value.code == 0
    assert "(default: float32)" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("b_transposed, layout", [(True, "b=W.T"), (False, "b row-major")])
def test_benchmark_rows(b_transposed, layout):
    rows = ex.benchmark(2, 3, 4, "float32", b_transposed)
    names = [*VARIANT_NAMES, "vector_k_kernel[grid]", "torch"]
    assert [row["variant"] for row in rows] == names
    for row in rows:
        assert set(row) == set(common.TIMING_COLUMNS)
        assert row["case"] == f"2x3x4 float32 {layout}" and row["unit"] == "TFLOP/s"
        assert row["GPU ms"] > 0 and row["% of ceiling"] is None
        assert row["throughput"] == pytest.approx(2 * 2 * 3 * 4 / (row["GPU ms"] * 1e-3) / 1e12)
        assert (row["host us"] is None) == common.INTERPRETED
    assert rows[-1]["GPU x torch"] == 1.0


def test_sweep_cases_are_valid():
    for case in ex.SWEEP:
        assert {"m", "n", "k"} <= set(case) <= {"m", "n", "k", "dtype", "b_transposed"}
        assert case.get("dtype", "float32") in ex.DTYPES
    assert len(ex.SWEEP) == 5  # make bench's 01 cases: compare like with like across runs


@pytest.mark.parametrize("block_k", [16, 128, 256])
def test_vector_k_at_other_block_sizes(block_k, monkeypatch):
    # K shorter than a step, a step and a half, and several steps, whatever BLOCK_K is.
    monkeypatch.setitem(ex.VECTOR_K_LAUNCH, "BLOCK_K", block_k)
    for k in (5, 200, 1001):
        ex.check_variants(only("vector_k"), 4, 6, k, torch.float32, transpose_a=True)
    a, b = randn(3, 200), randn(200, 2)  # the op launches it so too
    c = op.matmul_elementwise(a, b)
    common.assert_close(c, *float64_product(a, b), 200, f"op at BLOCK_K = {block_k}")


# ## The op: op.py


def test_op_uses_the_lessons_kernel():
    assert op.lesson is ex and op.common is common


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("fn", [op.matmul_elementwise, OP], ids=["entry", "op"])
def test_op_dtypes_and_views(fn, dtype):
    a = common.random_matrix(5, 300, dtype, transposed=True)
    b = common.random_matrix(300, 7, dtype)
    with common.uninitialized_memory_is_nan():
        c = fn(a, b)
    assert c.dtype == dtype
    common.assert_close(c, *float64_product(a, b), 300, f"op {dtype}")


BAD_INPUTS = {
    "not a tensor": (lambda: ([[1.0]], randn(1, 1)), TypeError, "must be tensors, got list"),
    "not a tensor, b requires grad": (
        lambda: ([[1.0]], randn(1, 1, requires_grad=True)),
        TypeError,
        "must be tensors",
    ),
    "1-D": (lambda: (randn(3), randn(3, 2)), ValueError, r"2-D.*\(3,\) and \(3, 2\)"),
    "3-D": (lambda: (randn(2, 3, 4), randn(4, 2)), ValueError, r"2-D.*\(2, 3, 4\)"),
    "K mismatch": (
        lambda: (randn(3, 4), randn(5, 2)),
        ValueError,
        r"a is \(3, 4\) and b \(5, 2\): their K must match",
    ),
    "K mismatch, a requires grad": (
        lambda: (randn(3, 4, requires_grad=True), randn(5, 2)),
        ValueError,
        "K must match",
    ),
    "mixed dtypes": (
        lambda: (randn(3, 4), randn(4, 2, dtype=torch.float64)),
        TypeError,
        "torch.float32, torch.float64",
    ),
    "int32": (
        lambda: (torch.ones(3, 4, dtype=torch.int32), torch.ones(4, 2, dtype=torch.int32)),
        TypeError,
        "share a dtype of.*float64.*torch.int32",
    ),
    "meta device": (lambda: (randn(3, 4), torch.randn(4, 2, device="meta")), ValueError, "meta"),
    "too many outputs": (
        lambda: tuple(
            torch.ones(1, 1, device=common.DEVICE).expand(shape)
            for shape in ((2**16, 1), (1, 2**15))
        ),
        ValueError,
        "2,147,483,648 outputs",
    ),
}


@pytest.mark.parametrize("entry", ["entry", "torch.ops"])
@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input(entry, case):
    make, error, message = BAD_INPUTS[case]
    a, b = make()
    fn = op.matmul_elementwise
    if entry == "torch.ops":
        fn = OP
        if case.startswith("not a tensor"):  # the dispatcher reads its schema before our code runs
            error, message = RuntimeError, "Expected a value of type 'Tensor'.*found type 'list'"
    for _ in range(2):  # a layout that fails validation keeps no plan: refused every call
        with pytest.raises(error, match=message):
            fn(a, b)


@pytest.mark.parametrize("case", [c for c in BAD_INPUTS if not c.startswith("not a tensor")])
def test_fake_validates_like_the_entry(case):
    # torch.compile runs the op's fake function on fake tensors: it must refuse the same input.
    make, error, message = BAD_INPUTS[case]
    with torch._subclasses.fake_tensor.FakeTensorMode(allow_non_fake_inputs=True):
        a, b = make()
        with pytest.raises(error, match=message):
            OP(a, b)


def test_a_negated_view_is_refused_by_the_entry_and_resolved_by_the_op():
    # The imaginary part of a conjugate holds its memory's values with the signs flipped
    # (is_neg()): a kernel would read the memory. The entry names it, in a and in out; the
    # registered op gets it resolved by PyTorch's dispatcher, and is right.
    a, b = (
        torch.randn(4, 3, dtype=torch.cfloat, device=common.DEVICE).conj().imag,
        torch.randn(3, 5, device=common.DEVICE),
    )
    assert a.is_neg()
    for _ in range(2):  # a layout refused keeps no plan
        with pytest.raises(ValueError, match=r"a is a negated view \(is_neg\(\)\)"):
            op.matmul_elementwise(a, b)
    with pytest.raises(ValueError, match="out is a negated view"):
        op.matmul_elementwise(
            b.T, b, out=torch.randn(5, 5, dtype=torch.cfloat, device=common.DEVICE).conj().imag
        )
    a64 = a.resolve_neg().double()
    common.assert_close(OP(a, b), a64 @ b.double(), a64.abs() @ b.double().abs(), 3, "op")


def test_bad_out():
    a, b, entry = randn(3, 4), randn(4, 2), op.matmul_elementwise
    with pytest.raises(ValueError, match=r"out .*\(2, 3\).*expected \(3, 2\)"):
        entry(a, b, out=randn(2, 3))
    with pytest.raises(ValueError, match="out .*torch.float16.*expected.*torch.float32"):
        entry(a, b, out=randn(3, 2, dtype=torch.float16))
    with pytest.raises(TypeError, match="out must be a torch.Tensor, got list"):
        entry(a, b, out=[[0.0] * 2] * 3)


def test_out_with_stride_zero_is_refused():
    # Issue 16: matmul(randn(8, 5), randn(5, 6), out=empty(1, 6).expand(8, 6)) used to be accepted.
    out = torch.zeros(1, 6, device=common.DEVICE).expand(8, 6)
    with pytest.raises(ValueError, match=r"strides \(0, 1\).*share one memory location"):
        op.matmul_elementwise(randn(8, 5), randn(5, 6), out=out)
    assert torch.equal(out, torch.zeros(8, 6, device=common.DEVICE))  # nothing written


def test_writes_into_a_strided_out():
    a, b = randn(5, 9), randn(9, 3)
    storage = nan(3, 10)
    out = storage[:, ::2].T  # (5, 3), strides (2, 10)
    assert op.matmul_elementwise(a, b, out=out) is out
    torch.testing.assert_close(out, a @ b)
    assert storage[:, 1::2].isnan().all()  # nothing written between the columns


def test_out_that_is_an_input():
    # Issue 16's case, smaller: a program still reads a row of a after others overwrote it.
    a, b = randn(24, 24), randn(24, 24)
    expected, magnitude = float64_product(a, b)
    assert op.matmul_elementwise(a, b, out=a) is a
    common.assert_close(a, expected, magnitude, 24, "matmul_elementwise(a, b, out=a) 24x24")


def test_out_that_overlaps_an_input():
    a, b = randn(4, 4), randn(4, 4).T
    expected, magnitude = float64_product(a, b)
    assert op.matmul_elementwise(a, b, out=b) is b  # out: b itself, a transposed view
    common.assert_close(b, expected, magnitude, 4, "out=b (a .T view)")
    storage = randn(4, 10)  # out shifted by one column against b
    a, b, out = randn(4, 4), storage[:, :4], storage[:, 1:5]
    expected, magnitude = float64_product(a, b)
    op.matmul_elementwise(a, b, out=out)
    common.assert_close(out, expected, magnitude, 4, "out overlapping b")


@pytest.mark.parametrize("overlapping", [False, True])
def test_out_bumps_its_version_so_a_backward_that_saved_it_raises(overlapping):
    # PyTorch's own out= does this: without the bump, z.backward() would use out's new values.
    a = randn(3, 3)
    out = a if overlapping else torch.zeros(3, 3, device=common.DEVICE)
    w = torch.ones(3, 3, device=common.DEVICE, requires_grad=True)
    z = (w * out).sum()  # saves out for the backward
    version = out._version
    op.matmul_elementwise(a, randn(3, 3), out=out)
    assert out._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_out_that_requires_grad_is_refused():
    out = torch.zeros(3, 2, device=common.DEVICE, requires_grad=True)
    with pytest.raises(ValueError, match="out requires grad"):
        op.matmul_elementwise(randn(3, 4), randn(4, 2), out=out)
    assert torch.equal(out, torch.zeros(3, 2, device=common.DEVICE))  # nothing written
    with torch.no_grad():  # as for PyTorch's out=, and how optimizers write into parameters
        ones = torch.ones(3, 4, device=common.DEVICE), torch.ones(4, 2, device=common.DEVICE)
        op.matmul_elementwise(*ones, out=out)
    assert torch.equal(out.detach(), torch.full((3, 2), 4.0, device=common.DEVICE))


def test_out_with_inputs_that_require_grad_is_refused():
    a, b = randn(3, 4, requires_grad=True), randn(4, 2)
    with pytest.raises(ValueError, match="out= is not differentiable"):
        op.matmul_elementwise(a, b, out=torch.empty(3, 2, device=common.DEVICE))
    with torch.no_grad():  # no graph to record: out= is fine
        out = op.matmul_elementwise(a, b, out=torch.empty(3, 2, device=common.DEVICE))
    torch.testing.assert_close(out, a.detach() @ b)


def test_entry_launches_the_kernel_directly_when_no_gradient_is_needed(monkeypatch):
    def no_autograd(*args):
        raise AssertionError("went through the autograd Function")

    monkeypatch.setattr(op.MatmulElementwise, "apply", no_autograd)
    a, b = randn(2, 3), randn(3, 2)
    out = op.matmul_elementwise(a, b)
    torch.testing.assert_close(out, a @ b)
    assert out.grad_fn is None
    with torch.no_grad():
        assert op.matmul_elementwise(a.requires_grad_(), b).grad_fn is None


def test_a_plan_runs_each_new_pair_of_its_layout(monkeypatch):
    # product() plans each layout of a and b once (sizes, strides, the grid) and runs the plan for
    # the next a and b of that layout, with their own values; the same shapes at an address 4
    # bytes off 16, or transposed, are other layouts. Outputs start as NaN: each is written.
    planned = []
    monkeypatch.setattr(op, "PLANS", {})
    real = op.plan
    monkeypatch.setattr(op, "plan", lambda *args, **kw: planned.append(1) or real(*args, **kw))
    buffer = torch.empty(17 * 30 + 1, device=common.DEVICE)
    b = randn(30, 9)
    for start, transposed in ((0, False), (0, False), (1, False), (1, False), (0, True)):
        a = buffer[start : start + 17 * 30].normal_()
        a = a.view(30, 17).T if transposed else a.view(17, 30)
        with common.uninitialized_memory_is_nan():
            c = op.matmul_elementwise(a, b)
        common.assert_close(c, *float64_product(a, b), 30, f"a at {start}, {transposed=}")
    assert len(planned) == 3 and len(op.PLANS) == 3


def test_out_of_another_layout_than_a_plans_new_c(monkeypatch):
    # A plan launches into a new C under its layouts' kind (on a GPU, a Named launcher: the kernel
    # compiled for a C of strides (N, 1)); out= of other strides is launched under its own kind.
    kinds = []
    monkeypatch.setattr(op, "PLANS", {})
    traceable = common.traceable

    def recorded(kernel, in_op, kind=None):  # common.traceable, noting each kind asked for
        kinds.append(kind)
        return traceable(kernel, in_op, kind)

    monkeypatch.setattr(common, "traceable", recorded)
    a, b = randn(17, 30), randn(30, 9)
    storage = nan(9, 17)
    for out in (None, storage.T, None):
        c = op.matmul_elementwise(a, b, out=out)
        common.assert_close(c, *float64_product(a, b), 30, f"out {None if out is None else 'T'}")
    assert not storage.isnan().any()  # out= written through its strides
    (key,) = op.PLANS
    assert kinds == [key, None, key]  # new C, out, new C


def grad_inputs(m, n, k, dtype, transposed=False):
    """a (m, k) and b (k, n) that require grad; transposed: a is a .T view and b row-major."""
    a = common.random_matrix(m, k, dtype, transposed=transposed).requires_grad_()
    b = common.random_matrix(k, n, dtype, transposed=not transposed).requires_grad_()
    return a, b


@pytest.mark.parametrize("fn", [op.matmul_elementwise, OP], ids=["entry", "op"])
def test_gradcheck_float64(fn):
    assert torch.autograd.gradcheck(fn, grad_inputs(3, 2, 4, torch.float64))
    assert torch.autograd.gradcheck(fn, grad_inputs(2, 3, 3, torch.float64, transposed=True))


@pytest.mark.parametrize("fn", [op.matmul_elementwise, OP], ids=["entry", "op"])
def test_gradgradcheck_float64(fn):
    # The backward calls the entry again (dA = dC @ B^T, dB = A^T @ dC), so it has a gradient too.
    assert torch.autograd.gradgradcheck(fn, grad_inputs(2, 3, 2, torch.float64))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("fn", [op.matmul_elementwise, OP], ids=["entry", "op"])
def test_gradients_match_float64(fn, dtype):
    m, n, k = 5, 4, 6
    a, b = grad_inputs(m, n, k, dtype)
    out = fn(a, b)
    assert out.grad_fn is not None  # never a silent detach
    grad = randn(m, n, dtype=dtype)
    out.backward(grad)
    common.assert_close(a.grad, *float64_product(grad, b.T), n, f"grad of a {dtype}")
    common.assert_close(b.grad, *float64_product(a.T, grad), m, f"grad of b {dtype}")


def test_only_the_input_that_needs_a_gradient_gets_one():
    a, b = randn(3, 4), randn(4, 2, requires_grad=True)
    op.matmul_elementwise(a, b).sum().backward()  # the gradient: a stride-0 view of ones
    assert a.grad is None
    torch.testing.assert_close(b.grad, a.T @ torch.ones(3, 2, device=common.DEVICE))


def test_eager_gradients_skip_the_dispatcher():
    a, b = (randn(4, 4, requires_grad=True) for _ in range(2))
    assert support.dispatched_ops(lambda: op.matmul_elementwise(a, b).sum().backward()) == []
    assert support.dispatched_ops(lambda: OP(a, b).sum().backward()) == [
        "triton_lessons::matmul_elementwise"
    ]


OPCHECK_INPUTS = {
    "float32": lambda: (torch.randn(3, 5), torch.randn(5, 4)),
    "float16": lambda: (torch.randn(3, 5).half(), torch.randn(5, 4).half()),
    "bfloat16 with grad": lambda: (
        torch.randn(2, 3).bfloat16().requires_grad_(),
        torch.randn(3, 2).bfloat16(),
    ),
    "float64 with grad": lambda: (
        torch.randn(3, 4, dtype=torch.float64, requires_grad=True),
        torch.randn(4, 2, dtype=torch.float64, requires_grad=True),
    ),
    "transposed views": lambda: (torch.randn(4, 3).T, torch.randn(2, 4).T.requires_grad_()),
    "empty": lambda: (torch.randn(0, 4), torch.randn(4, 3)),
    "k = 0": lambda: (torch.randn(2, 0), torch.randn(0, 3)),
}


@pytest.mark.parametrize("case", OPCHECK_INPUTS)
def test_opcheck(case):
    a, b = (
        t.detach().to(common.DEVICE).requires_grad_(t.requires_grad) for t in OPCHECK_INPUTS[case]()
    )
    torch.library.opcheck(OP, (a, b))


def test_torch_compile_fullgraph_forward_and_backward():
    # The entry alone: anything around it would make Inductor compile C++ on the CPU, for seconds.
    compiled = torch.compile(op.matmul_elementwise, fullgraph=True)
    m, n, k = 4, 3, 5
    a, b = grad_inputs(m, n, k, torch.float32, transposed=True)
    out = compiled(a, b)
    common.assert_close(out, *float64_product(a, b), k, "compiled forward")
    grad = randn(m, n)
    out.backward(grad)
    common.assert_close(a.grad, *float64_product(grad, b.T), n, "compiled grad of a")
    common.assert_close(b.grad, *float64_product(a.T, grad), m, "compiled grad of b")


def test_torch_compile_of_the_registered_op():
    # aot_eager: the graph runs as recorded, without Inductor's C++ compile on the CPU.
    compiled = torch.compile(OP, fullgraph=True, backend="aot_eager")
    a, b = grad_inputs(3, 2, 4, torch.float32)
    out = compiled(a, b)
    common.assert_close(out, *float64_product(a, b), 4, "compiled op")
    out.sum().backward()
    assert a.grad is not None and b.grad is not None


def test_torch_compile_with_out():
    compiled = torch.compile(op.matmul_elementwise, fullgraph=True, backend="aot_eager")
    a, b, out = randn(3, 4), randn(4, 2), nan(3, 2)
    assert compiled(a, b, out=out) is out
    common.assert_close(out, *float64_product(a, b), 4, "compiled out=")


# ## On a GPU only


@support.gpu_only
@pytest.mark.parametrize("fn", [*ex.VARIANTS.values(), op.matmul_elementwise])
def test_more_than_65535_columns(fn):
    # A 2-D grid (M, N) would fail here: CUDA's second grid axis stops at 65535.
    for m, n, dtype in ((2, 70000, torch.float32), (70000, 2, torch.float16)):
        a, b = common.random_matrix(m, 3, dtype, transposed=True), common.random_matrix(3, n, dtype)
        with common.uninitialized_memory_is_nan():
            c = fn(a, b)
        common.assert_close(c, *float64_product(a, b), 3, f"{m}x{n}x3 {dtype}")


@support.gpu_only
@pytest.mark.parametrize("fn", [ax.vector_k_any_x, op.matmul_elementwise])
def test_offsets_past_2_to_the_31(fn):
    # row * stride_am reaches (2^20 + 7) * 2048 > 2^31 elements: any_x.py's int64 offsets.
    m, k = 2**20 + 8, 2048
    a = randn(m, k, dtype=torch.float16)
    b = randn(k, 1, dtype=torch.float16)
    with common.uninitialized_memory_is_nan():
        out = fn(a, b)
    rows = torch.tensor([0, 1, m // 2, m - 2, m - 1], device=common.DEVICE)
    expected, magnitude = float64_product(a[rows], b)
    common.assert_close(out[rows], expected, magnitude, k, f"rows of a {m}x{k} float16")
    assert not out.isnan().any()


@support.gpu_only
@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_larger_sizes_on_gpu(variant):
    ex.check_variants(only(variant), 513, 257, 1031, torch.float32)
    ex.check_variants(
        only(variant), 300, 200, 4097, torch.bfloat16, transpose_a=True, transpose_b=True
    )


@support.gpu_only
def test_capture_in_a_cuda_graph():
    a, b = randn(40, 30), randn(20, 30).T
    result = {}
    graph = common.capture_graph(lambda: result.update(out=op.matmul_elementwise(a, b)))
    a.copy_(torch.randn_like(a))  # a replay reads the new values through the same pointers
    graph.replay()
    torch.cuda.synchronize()
    common.assert_close(result["out"], *float64_product(a, b), 30, "replayed from a CUDA graph")


@support.gpu_only
def test_call_on_a_side_stream():
    a, b = randn(300, 200, dtype=torch.bfloat16), randn(200, 100, dtype=torch.bfloat16)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        out = op.matmul_elementwise(a, b)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    common.assert_close(out, *float64_product(a, b), 200, "on a side stream")
