import pytest
import torch

import support
from support import common

ex = support.load("01_matmul_elementwise")

VARIANT_NAMES = list(ex.VARIANTS)
ENTRIES = ["matmul_elementwise", *VARIANT_NAMES]


def only(variant):
    """The one-entry dict of VARIANTS that ex.check takes."""
    return {variant: ex.VARIANTS[variant]}


def entry_fn(entry):
    return ex.matmul_elementwise if entry == "matmul_elementwise" else ex.VARIANTS[entry]


def float64_product(a, b):
    """a @ b in float64 and the same on absolute values: what common.assert_close compares with."""
    a64, b64 = a.detach().double(), b.detach().double()
    return a64 @ b64, a64.abs() @ b64.abs()


def randn(*shape, **kwargs):
    return torch.randn(*shape, device=common.DEVICE, **kwargs)


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
    ex.check(only(variant), m, n, k, torch.float32)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_a_thousand_outputs(variant):
    ex.check(only(variant), 1000, 1, 3, torch.float32)
    ex.check(only(variant), 1, 1001, 2, torch.float32)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_dtypes(variant, dtype):
    ex.check(only(variant), 5, 7, 300, dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_output_keeps_the_input_dtype(dtype):
    assert ex.matmul_elementwise(randn(3, 4).to(dtype), randn(4, 2).to(dtype)).dtype == dtype


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_half_precision_accumulates_in_float32(variant):
    # 2048 products 1 * (1 + 2^-10): the exact sum 2050 is a float16 number, and float32 adds up
    # these terms exactly. A float16 running sum drops the 2^-10 of each term once it passes 2.
    a = torch.ones(1, 2048, dtype=torch.float16, device=common.DEVICE)
    b = torch.full((2048, 1), 1 + 2.0**-10, dtype=torch.float16, device=common.DEVICE)
    assert ex.VARIANTS[variant](a, b).item() == 2050.0


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_float64_accumulates_in_float64(variant):
    # 1 + 1e-10 - 1: a float32 sum loses the 1e-10 (its spacing near 1 is 1.2e-7).
    a = torch.tensor([[1.0, 1e-10, -1.0]], dtype=torch.float64, device=common.DEVICE)
    b = torch.ones(3, 1, dtype=torch.float64, device=common.DEVICE)
    assert ex.VARIANTS[variant](a, b).item() == pytest.approx(1e-10, rel=1e-6)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_transposed_views(variant, transpose_a, transpose_b):
    ex.check(only(variant), 4, 6, 37, torch.float32, transpose_a, transpose_b)


def check_sliced(variant, m, n, k, dtype, step, transpose_a=False, transpose_b=False):
    """ex.check's comparison on operands whose columns are every step-th of a wider tensor."""
    a = ex.random_operand(m, k * step, dtype, transpose_a)[:, ::step]
    b = ex.random_operand(k, n * step, dtype, transpose_b)[:, ::step]
    out = torch.full((m, n), float("nan"), dtype=dtype, device=common.DEVICE)
    ex.VARIANTS[variant](a, b, out=out)
    common.assert_close(out, *float64_product(a, b), k, f"{variant} sliced {m}x{n}x{k} {dtype}")


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_sliced_views(variant):
    check_sliced(variant, 5, 3, 40, torch.float32, step=3)
    check_sliced(variant, 5, 3, 40, torch.float16, step=2, transpose_a=True)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_views_are_not_copied(variant, monkeypatch):
    w, h = randn(2, 4), randn(3, 4)

    def no_copy(*args, **kwargs):
        raise AssertionError("the wrapper copied an input")

    monkeypatch.setattr(torch.Tensor, "contiguous", no_copy)
    out = ex.VARIANTS[variant](h, w.T)
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
    out = ex.matmul_elementwise(h, w.T)
    assert out.shape == (3, 2)
    torch.testing.assert_close(out, h @ w.T)


def test_worked_example_of_the_docstring():
    # A 2x3 and B 3x2 row-major: program 3 stores a3*b1 + a4*b3 + a5*b5 at C[1, 1].
    a = torch.arange(6.0, device=common.DEVICE).reshape(2, 3)
    b = torch.arange(6.0, device=common.DEVICE).reshape(3, 2)
    assert a.stride() == (3, 1) and b.stride() == (2, 1)
    for fn in ex.VARIANTS.values():
        assert fn(a, b)[1, 1].item() == 3 * 1 + 4 * 3 + 5 * 5


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_k_zero_writes_zeros(variant):
    ex.check(only(variant), 3, 4, 0, torch.float32)
    out = torch.full((3, 4), float("nan"), device=common.DEVICE)
    assert ex.VARIANTS[variant](randn(3, 0), randn(0, 4), out=out) is out
    assert torch.equal(out, torch.zeros(3, 4, device=common.DEVICE))


@pytest.mark.parametrize("variant", VARIANT_NAMES)
@pytest.mark.parametrize("m, n, k", [(0, 3, 4), (3, 0, 4), (0, 0, 0)])
def test_empty_outputs(variant, m, n, k):
    ex.check(only(variant), m, n, k, torch.float32)
    for fn in ex.VARIANTS[variant], ex.matmul_elementwise:
        assert fn(randn(m, k), randn(k, n)).shape == (m, n)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_writes_into_a_strided_out(variant):
    a, b = randn(5, 9), randn(9, 3)
    storage = torch.full((3, 10), float("nan"), device=common.DEVICE)
    out = storage[:, ::2].T  # (5, 3), strides (2, 10)
    assert ex.VARIANTS[variant](a, b, out=out) is out
    torch.testing.assert_close(out, a @ b)
    assert storage[:, 1::2].isnan().all()  # nothing written between the columns


def test_entry_launches_vector_k_directly_when_no_gradient_is_needed(monkeypatch):
    calls = []
    original = ex.vector_k
    monkeypatch.setattr(ex, "vector_k", lambda *args: calls.append(args) or original(*args))
    a, b = randn(2, 3), randn(3, 2)
    out = ex.matmul_elementwise(a, b)
    torch.testing.assert_close(out, a @ b)
    assert len(calls) == 1 and out.grad_fn is None


def test_reference_is_torch_matmul():
    a = torch.randn(3, 5, dtype=torch.float64)
    b = torch.randn(5, 2, dtype=torch.float64)
    assert torch.equal(ex.reference(a, b), a @ b)


def test_check_catches_a_wrong_kernel():
    wrong = {"wrong": lambda a, b, out=None: out.copy_((a @ b).T)}
    with pytest.raises(AssertionError, match="wrong 4x4x4"):
        ex.check(wrong, 4, 4, 4)
    forgets = {"forgets": lambda a, b, out=None: out}  # leaves the NaN
    with pytest.raises(AssertionError, match="forgets.*got nan"):
        ex.check(forgets, 2, 2, 3)


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
        "share a dtype of.*torch.int32",
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


@pytest.mark.parametrize("entry", [*ENTRIES, "torch.ops"])
@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input(entry, case):
    make, error, message = BAD_INPUTS[case]
    a, b = make()
    if entry == "torch.ops":
        fn = torch.ops.triton_lessons.matmul_elementwise
        if case.startswith("not a tensor"):  # the dispatcher reads its schema before our code runs
            error, message = RuntimeError, "Expected a value of type 'Tensor'.*found type 'list'"
    else:
        fn = entry_fn(entry)
    with pytest.raises(error, match=message):
        fn(a, b)


@pytest.mark.parametrize("case", [c for c in BAD_INPUTS if not c.startswith("not a tensor")])
def test_fake_validates_like_the_entry(case):
    # torch.compile runs the op's fake function on fake tensors: it must refuse the same input.
    make, error, message = BAD_INPUTS[case]
    with torch._subclasses.fake_tensor.FakeTensorMode(allow_non_fake_inputs=True):
        a, b = make()
        with pytest.raises(error, match=message):
            torch.ops.triton_lessons.matmul_elementwise(a, b)


@pytest.mark.parametrize("entry", ENTRIES)
def test_bad_out(entry):
    a, b = randn(3, 4), randn(4, 2)
    with pytest.raises(ValueError, match=r"out .*\(2, 3\).*expected \(3, 2\)"):
        entry_fn(entry)(a, b, out=randn(2, 3))
    with pytest.raises(ValueError, match="out .*torch.float16.*expected.*torch.float32"):
        entry_fn(entry)(a, b, out=randn(3, 2, dtype=torch.float16))
    with pytest.raises(TypeError, match="out must be a torch.Tensor, got list"):
        entry_fn(entry)(a, b, out=[[0.0] * 2] * 3)


@pytest.mark.parametrize("entry", ENTRIES)
def test_out_with_stride_zero_is_refused(entry):
    # Issue 16: matmul(randn(8, 5), randn(5, 6), out=empty(1, 6).expand(8, 6)) used to be accepted.
    out = torch.zeros(1, 6, device=common.DEVICE).expand(8, 6)
    with pytest.raises(ValueError, match=r"strides \(0, 1\).*share one memory location"):
        entry_fn(entry)(randn(8, 5), randn(5, 6), out=out)
    assert torch.equal(out, torch.zeros(8, 6, device=common.DEVICE))  # nothing written


def test_out_that_is_an_input():
    # Issue 16's case, smaller: a program still reads a row of a after others overwrote it.
    a, b = randn(24, 24), randn(24, 24)
    expected, magnitude = float64_product(a, b)
    assert ex.matmul_elementwise(a, b, out=a) is a
    common.assert_close(a, expected, magnitude, 24, "matmul_elementwise(a, b, out=a) 24x24")


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_out_that_overlaps_an_input(variant):
    a, b = randn(9, 4), randn(4, 4)
    expected, magnitude = float64_product(a, b)
    assert ex.VARIANTS[variant](a, b, out=a) is a
    common.assert_close(a, expected, magnitude, 4, f"{variant} out=a")
    a, b = randn(4, 4), randn(4, 4).T
    expected, magnitude = float64_product(a, b)
    assert ex.VARIANTS[variant](a, b, out=b) is b  # out: b itself, a transposed view
    common.assert_close(b, expected, magnitude, 4, f"{variant} out=b (a .T view)")
    storage = randn(4, 10)  # out shifted by one column against b
    a, b, out = randn(4, 4), storage[:, :4], storage[:, 1:5]
    expected, magnitude = float64_product(a, b)
    ex.VARIANTS[variant](a, b, out=out)
    common.assert_close(out, expected, magnitude, 4, f"{variant} out overlapping b")


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("overlapping", [False, True])
def test_out_bumps_its_version_so_a_backward_that_saved_it_raises(entry, overlapping):
    # PyTorch's own out= does this: without the bump, z.backward() would use out's new values.
    a = randn(3, 3)
    out = a if overlapping else torch.zeros(3, 3, device=common.DEVICE)
    w = torch.ones(3, 3, device=common.DEVICE, requires_grad=True)
    z = (w * out).sum()  # saves out for the backward
    version = out._version
    entry_fn(entry)(a, randn(3, 3), out=out)
    assert out._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


@pytest.mark.parametrize("entry", ENTRIES)
def test_out_that_requires_grad_is_refused(entry):
    out = torch.zeros(3, 2, device=common.DEVICE, requires_grad=True)
    with pytest.raises(ValueError, match="out requires grad"):
        entry_fn(entry)(randn(3, 4), randn(4, 2), out=out)
    assert torch.equal(out, torch.zeros(3, 2, device=common.DEVICE))  # nothing written
    with torch.no_grad():  # as for PyTorch's out=, and how optimizers write into parameters
        ones = torch.ones(3, 4, device=common.DEVICE), torch.ones(4, 2, device=common.DEVICE)
        entry_fn(entry)(*ones, out=out)
    assert torch.equal(out.detach(), torch.full((3, 2), 4.0, device=common.DEVICE))


def test_out_with_inputs_that_require_grad_is_refused():
    a, b = randn(3, 4, requires_grad=True), randn(4, 2)
    with pytest.raises(ValueError, match="out= is not differentiable"):
        ex.matmul_elementwise(a, b, out=torch.empty(3, 2, device=common.DEVICE))
    with torch.no_grad():  # no graph to record: out= is fine
        out = ex.matmul_elementwise(a, b, out=torch.empty(3, 2, device=common.DEVICE))
    torch.testing.assert_close(out, a.detach() @ b)


@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_variants_refuse_inputs_that_require_grad(variant):
    # A variant is a plain launch: rather than return a result cut off from autograd, it says so.
    a, b = randn(3, 4), randn(4, 2, requires_grad=True)
    with pytest.raises(ValueError, match="requires grad: use matmul_elementwise"):
        ex.VARIANTS[variant](a, b)
    with pytest.raises(ValueError, match="out= is not differentiable"):  # kernel_out's refusal
        ex.VARIANTS[variant](a, b, out=torch.empty(3, 2, device=common.DEVICE))
    with torch.no_grad():
        torch.testing.assert_close(ex.VARIANTS[variant](a, b), a @ b.detach())


def grad_inputs(m, n, k, dtype, transposed=False):
    """a (m, k) and b (k, n) that require grad; transposed: a is a .T view and b row-major."""
    a = ex.random_operand(m, k, dtype, transposed=transposed).requires_grad_()
    b = ex.random_operand(k, n, dtype, transposed=not transposed).requires_grad_()
    return a, b


OP = torch.ops.triton_lessons.matmul_elementwise


@pytest.mark.parametrize("fn", [ex.matmul_elementwise, OP], ids=["entry", "op"])
def test_gradcheck_float64(fn):
    assert torch.autograd.gradcheck(fn, grad_inputs(3, 2, 4, torch.float64))
    assert torch.autograd.gradcheck(fn, grad_inputs(2, 3, 3, torch.float64, transposed=True))


@pytest.mark.parametrize("fn", [ex.matmul_elementwise, OP], ids=["entry", "op"])
def test_gradgradcheck_float64(fn):
    # The backward calls the entry again (dA = dC @ B^T, dB = A^T @ dC), so it has a gradient too.
    assert torch.autograd.gradgradcheck(fn, grad_inputs(2, 3, 2, torch.float64))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_gradients_match_float64(dtype):
    m, n, k = 5, 4, 6
    a, b = grad_inputs(m, n, k, dtype)
    out = ex.matmul_elementwise(a, b)
    assert "MatmulElementwise" in type(out.grad_fn).__name__  # never a silent detach
    grad = randn(m, n, dtype=dtype)
    out.backward(grad)
    common.assert_close(a.grad, *float64_product(grad, b.T), n, f"grad of a {dtype}")
    common.assert_close(b.grad, *float64_product(a.T, grad), m, f"grad of b {dtype}")


def test_only_the_input_that_needs_a_gradient_gets_one():
    a, b = randn(3, 4), randn(4, 2, requires_grad=True)
    ex.matmul_elementwise(a, b).sum().backward()  # the gradient: a stride-0 view of ones
    assert a.grad is None
    torch.testing.assert_close(b.grad, a.T @ torch.ones(3, 2, device=common.DEVICE))


def test_eager_gradients_skip_the_dispatcher():
    a, b = (randn(4, 4, requires_grad=True) for _ in range(2))
    assert support.dispatched_ops(lambda: ex.matmul_elementwise(a, b).sum().backward()) == []
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
    compiled = torch.compile(ex.matmul_elementwise, fullgraph=True)
    m, n, k = 4, 3, 5
    a, b = grad_inputs(m, n, k, torch.float32, transposed=True)
    out = compiled(a, b)
    common.assert_close(out, *float64_product(a, b), k, "compiled forward")
    grad = randn(m, n)
    out.backward(grad)
    common.assert_close(a.grad, *float64_product(grad, b.T), n, "compiled grad of a")
    common.assert_close(b.grad, *float64_product(a.T, grad), m, "compiled grad of b")


def test_torch_compile_with_out():
    # aot_eager: the graph runs as recorded, without Inductor's C++ compile on the CPU.
    compiled = torch.compile(ex.matmul_elementwise, fullgraph=True, backend="aot_eager")
    a, b, out = randn(3, 4), randn(4, 2), torch.full((3, 2), float("nan"), device=common.DEVICE)
    assert compiled(a, b, out=out) is out
    common.assert_close(out, *float64_product(a, b), 4, "compiled out=")


@pytest.mark.parametrize("flags, layout", [([], "b=W.T"), (["--b-row-major"], "b row-major")])
def test_main_runs(capsys, flags, layout):
    assert ex.main(["--m", "3", "--n", "2", "--k", "5", "--dtype", "float16", *flags]) == 0
    printed = capsys.readouterr().out
    assert "check passed" in printed
    for name in [*VARIANT_NAMES, "matmul_elementwise", "vector_k_kernel[grid]", "torch"]:
        assert f"3x2x5 float16 {layout}  {name} " in printed
    assert "each value of a is loaded N = 2 times" in printed


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
    names = [*VARIANT_NAMES, "matmul_elementwise", "vector_k_kernel[grid]", "torch"]
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
        assert {"m", "n", "k", "dtype"} <= set(case) <= {"m", "n", "k", "dtype", "b_transposed"}
        assert case["dtype"] in ex.DTYPES


@pytest.mark.parametrize("block_k", [16, 128, 256])
def test_vector_k_at_other_block_sizes(block_k, monkeypatch):
    # K shorter than a step, a step and a half, and several steps, whatever BLOCK_K is.
    monkeypatch.setitem(ex.VECTOR_K_LAUNCH, "BLOCK_K", block_k)
    for k in (5, 200, 1001):
        ex.check(only("vector_k"), 4, 6, k, torch.float32, transpose_a=True)


@support.gpu_only
@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_more_than_65535_columns(variant):
    # A 2-D grid (M, N) would fail here: CUDA's second grid axis stops at 65535.
    ex.check(only(variant), 2, 70000, 3, torch.float32)
    ex.check(only(variant), 70000, 2, 3, torch.float16, transpose_a=True)


@support.gpu_only
@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_offsets_past_2_to_the_31(variant):
    # row * stride_am reaches (2^20 + 7) * 2048 > 2^31 elements: int32 offsets would wrap around.
    m, k = 2**20 + 8, 2048
    a = randn(m, k, dtype=torch.float16)
    b = randn(k, 1, dtype=torch.float16)
    out = torch.full((m, 1), float("nan"), dtype=torch.float16, device=common.DEVICE)
    ex.VARIANTS[variant](a, b, out=out)
    rows = torch.tensor([0, 1, m // 2, m - 2, m - 1], device=common.DEVICE)
    expected, magnitude = float64_product(a[rows], b)
    common.assert_close(out[rows], expected, magnitude, k, f"{variant} rows of a {m}x{k} float16")
    assert not out.isnan().any()


@support.gpu_only
@pytest.mark.parametrize("variant", VARIANT_NAMES)
def test_larger_sizes_on_gpu(variant):
    ex.check(only(variant), 513, 257, 1031, torch.float32)
    ex.check(only(variant), 300, 200, 4097, torch.bfloat16, transpose_a=True, transpose_b=True)


@support.gpu_only
def test_capture_in_a_cuda_graph():
    a, b = randn(40, 30), randn(20, 30).T
    result = {}
    graph = common.capture_graph(lambda: result.update(out=ex.matmul_elementwise(a, b)))
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
        out = ex.matmul_elementwise(a, b)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    common.assert_close(out, *float64_product(a, b), 200, "on a side stream")
