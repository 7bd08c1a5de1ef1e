"""Tests for 04_weighted_sum: the lesson (main.py: forward and backward of every variant on every
size, dtype and layout, the Function, determinism, main) and the op (op.py: out=, second
derivatives, the registered ops with opcheck and torch.compile, the entry's paths, bad input)."""

import contextlib

import pytest
import torch

import support

ws = support.load("04_weighted_sum")
wide = support.load_beside("04_weighted_sum", "wide.py")  # Part 4: the "wide" variant
op = support.load_op("04_weighted_sum")
common = support.common
DEVICE = common.DEVICE
LAYOUTS = ("contiguous", "transposed", "sliced")
# The lesson's VARIANTS are (forward, backward) wrapper pairs, run directly by check(); these run
# through autograd: the entry, and the lesson's Function (the tuned pair).
AUTOGRAD = {"weighted_sum": op.weighted_sum, "WeightedSum": ws.WeightedSum.apply}
# The entry with each style: the lesson's kernels, with second derivatives.
ENTRY_STYLES = {
    f"weighted_sum {style}": lambda x, w, style=style: op.weighted_sum(x, w, style=style)
    for style in op.STYLES
}


def forward_reference(x, w):  # y of x (..., D): the lesson's reference() takes 2-D x only
    return (x * w).sum(-1)


def check_autograd(fn, x, what):  # y and both gradients of fn(x, w), by autograd, vs float64
    w = torch.randn(x.shape[-1], dtype=x.dtype, device=x.device)
    g = torch.randn(x.shape[:-1], dtype=x.dtype, device=x.device)
    terms, names = (x.shape[-1], 1, g.numel()), ("y", "grad_x", "grad_w")
    common.assert_function_close(fn, (x, w), g, forward_reference, terms, names, what)


# What sums in float32 only: Parts 1 to 3 of the lesson, and its Function (the tuned pair); the
# op's styles and wide.py's kernels (Part 4: any x) take float64 too.
FLOAT32_ONLY = {"tuned", "WeightedSum"}


def float64_ones(names):
    return [name for name in names if "simple" not in name and name not in FLOAT32_ONLY]


def layout(rows, d, dtype=torch.float32, how="contiguous", batch=()):
    """A random x of shape (*batch, rows, d): "contiguous", "transposed" (its last two dims swapped)
    or "sliced" (columns 1 to d of a wider x, so its rows are not 16-byte aligned)."""
    kw = {"dtype": dtype, "device": DEVICE}
    if how == "transposed":
        return torch.randn(*batch, d, rows, **kw).transpose(-1, -2)
    if how == "sliced":
        return torch.randn(*batch, rows, d + 3, **kw)[..., 1 : d + 1]
    return torch.randn(*batch, rows, d, **kw)


def assert_matches_float64(y, grads, x, w, g, what):
    """y = x @ w and its gradients (grad_x, grad_w) for upstream gradient g, against float64."""
    x64, w64, g64 = x.detach().double(), w.detach().double(), g.double()
    lead = tuple(range(x.dim() - 1))
    common.assert_close(
        y, (x64 * w64).sum(-1), (x64.abs() * w64.abs()).sum(-1), x.shape[-1], f"{what} y"
    )
    exact_gx = g64[..., None] * w64
    common.assert_close(
        grads[0], exact_gx.to(x.dtype).double(), exact_gx.abs(), 1, f"{what} grad_x"
    )
    common.assert_close(
        grads[1],
        (x64 * g64[..., None]).sum(lead),
        (x64.abs() * g64.abs()[..., None]).sum(lead),
        g.numel(),
        f"{what} grad_w",
    )


@pytest.mark.parametrize(
    "rows, d",
    [(1, 1), (17, 1), (1, 17), (17, 1000), (1000, 17), (1001, 33), (64, 1001), (5, 256)],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sizes(rows, d, dtype):
    assert ws.check_variants(layout(rows, d, dtype), wide.VARIANTS) == list(wide.VARIANTS)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("how", LAYOUTS)
def test_dtypes_and_layouts(dtype, how):
    names = float64_ones(wide.VARIANTS) if dtype == torch.float64 else list(wide.VARIANTS)
    variants = {name: wide.VARIANTS[name] for name in names}
    assert ws.check_variants(layout(37, 104, dtype, how), variants) == names


@support.gpu_only
@pytest.mark.parametrize("index", range(support.most_configs(ws)))
def test_every_config_on_gpu(index):
    # The other tests tune between two configs per kernel (support.load): here each kernel runs its
    # config
    # `index`, forward and backward, on D = 1000 (a masked tile) and rows of 16-byte multiples.
    with support.pinned_config(ws, index):
        assert ws.check_variants(layout(1001, 1000), wide.VARIANTS) == list(wide.VARIANTS)


@pytest.mark.parametrize(
    "batch, how",
    [((3,), "contiguous"), ((2, 3), "contiguous"), ((3,), "transposed"), ((2, 2), "sliced")],
)
def test_leading_dims(batch, how):
    for name, fn in AUTOGRAD.items():
        check_autograd(fn, layout(7, 40, how=how, batch=batch), f"{name} {batch} {how}")


@pytest.mark.parametrize("rows, d", [(0, 8), (0, 1), (4, 0)])
def test_empty(rows, d):
    # The entry launches nothing for an empty x: no autotuner times an empty launch. The lesson's
    # simple kernels launch no program for no rows, and sum no columns for D = 0.
    assert ws.check_variants(layout(rows, d), {"simple": ws.VARIANTS["simple"]}) == ["simple"]
    for name, fn in ENTRY_STYLES.items():
        check_autograd(fn, layout(rows, d), f"{name} empty")


@pytest.mark.parametrize("name", list(AUTOGRAD))
def test_strided_weight(name):
    x = torch.randn(19, 24, device=DEVICE, requires_grad=True)
    w = torch.randn(48, device=DEVICE)[::2].requires_grad_()
    g = torch.randn(19, device=DEVICE)
    y = AUTOGRAD[name](x, w)
    assert_matches_float64(y, torch.autograd.grad(y, (x, w), g), x, w, g, f"{name}, strided w")


@pytest.mark.parametrize("programs_per_sm", [1, 17, 1500])
def test_tuned_backward_with_few_and_many_programs(programs_per_sm, monkeypatch):
    # P = 1500 programs (on a CPU's one "SM"): partial has 1500 rows, and wide.py's
    # sum_partials_wide_kernel adds them in two steps of 1024; P = 1 walks every row tile in
    # one program.
    monkeypatch.setattr(ws, "PROGRAMS_PER_SM", programs_per_sm)
    x = layout(2000, 40, torch.bfloat16)
    both = {name: wide.VARIANTS[name] for name in ("tuned", "wide")}
    assert ws.check_variants(x, both) == ["tuned", "wide"]


def assert_y(y, x, w, what):  # y = x @ w against float64
    x64, w64 = x.detach().double(), w.detach().double()
    common.assert_close(y, (x64 * w64).sum(-1), (x64.abs() * w64.abs()).sum(-1), x.shape[-1], what)


@pytest.mark.parametrize("style", op.STYLES)
@pytest.mark.parametrize("shape", [(33, 20), (2, 3, 7), (0, 5), (4, 0), (1, 1)])
def test_out_gets_the_right_answer(style, shape):
    x, w = torch.randn(shape, device=DEVICE), torch.randn(shape[-1], device=DEVICE)
    out = torch.full(shape[:-1], float("nan"), device=DEVICE)
    assert op.weighted_sum(x, w, out=out, style=style) is out
    assert_y(out, x, w, f"{style} out= {shape}")


@pytest.mark.parametrize("style", op.STYLES)
@pytest.mark.parametrize("which", ["x's first row", "x's column", "weight"])
def test_out_that_aliases_an_input_gets_the_right_answer(style, which):
    # As torch.matmul(x, w, out=x[0]) does: y goes to a fresh buffer first, then into out.
    x, w = torch.randn(12, 12, device=DEVICE), torch.randn(12, device=DEVICE)
    x_before, w_before = x.clone(), w.clone()
    out = {"x's first row": x[0], "x's column": x[:, 5], "weight": w}[which]
    assert op.weighted_sum(x, w, out=out, style=style) is out
    assert_y(out, x_before, w_before, f"{style} out= {which}")


def test_strided_out_leaves_the_elements_between_alone():
    x, w = torch.randn(30, 8, device=DEVICE), torch.randn(8, device=DEVICE)
    buffer = torch.full((60,), float("nan"), device=DEVICE)
    assert op.weighted_sum(x, w, out=buffer[::2]) is not None
    assert_y(buffer[::2], x, w, "out with stride 2")
    assert buffer[1::2].isnan().all()


def test_out_version_is_bumped_as_by_pytorch():
    # A backward that saved out must raise rather than run on the values written over it.
    out = torch.zeros(6, device=DEVICE)
    w = torch.ones(6, device=DEVICE, requires_grad=True)
    z = (w * out).sum()
    version = out._version
    x, weight = torch.randn(6, 3, device=DEVICE), torch.randn(3, device=DEVICE)
    assert op.weighted_sum(x, weight, out=out) is out and out._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_out_is_refused_while_an_input_requires_grad():
    x, out = torch.randn(5, 4, device=DEVICE), torch.empty(5, device=DEVICE)
    for requires in [(True, False), (False, True)]:
        w = torch.randn(4, device=DEVICE)
        with pytest.raises(ValueError, match="not differentiable"):
            op.weighted_sum(x.requires_grad_(requires[0]), w.requires_grad_(requires[1]), out=out)
    with torch.no_grad():  # as PyTorch's out=: fine where no gradient is recorded
        assert op.weighted_sum(x, w, out=out) is out
    assert_y(out, x, w, "out= under no_grad")


@pytest.mark.parametrize("style", op.STYLES)
def test_out_problems(style):
    x, w = torch.ones(3, 4, device=DEVICE), torch.ones(4, device=DEVICE)

    def fn(out):
        return op.weighted_sum(x, w, out=out, style=style)

    with pytest.raises(ValueError, match=r"out .*\(4,\).*expected \(3,\)"):
        fn(torch.empty(4, device=DEVICE))
    with pytest.raises(ValueError, match=r"out .*torch.float64.*expected .*torch.float32"):
        fn(torch.empty(3, dtype=torch.float64, device=DEVICE))
    with pytest.raises(TypeError, match="out must be a torch.Tensor, got list"):
        fn([0.0] * 3)
    with pytest.raises(ValueError, match=r"strides \(0,\).*share one memory location"):
        fn(torch.empty(1, device=DEVICE).expand(3))


@pytest.mark.parametrize("style", op.STYLES)
@pytest.mark.parametrize("needs", [(True, False), (False, True), (True, True)])
def test_entry_gives_the_gradients_asked_for(style, needs):
    x = torch.randn(33, 20, device=DEVICE, requires_grad=needs[0])
    w = torch.randn(20, device=DEVICE, requires_grad=needs[1])
    g = torch.randn(33, device=DEVICE)
    inputs = [t for t, need in zip((x, w), needs) if need]
    grads = torch.autograd.grad(op.weighted_sum(x, w, style=style), inputs, g)
    want = exact_gradients(x, w, g)
    for grad, (expected, magnitude, terms) in zip(grads, [g for g, n in zip(want, needs) if n]):
        common.assert_close(grad, expected, magnitude, terms, f"{style} needs {needs}")


def exact_gradients(x, w, g):  # (grad_x, grad_w), each as (float64 value, magnitude, terms)
    x64, w64, g64 = x.detach().double(), w.detach().double(), g.double()
    grad_x = (g64[:, None] * w64, (g64[:, None] * w64).abs(), 1)
    grad_w = ((x64 * g64[:, None]).sum(0), (x64.abs() * g64.abs()[:, None]).sum(0), x.shape[0])
    return grad_x, grad_w


BAD_BACKWARD_INPUT = {  # case: (x2d, weight, grad_y), error, message
    "weight too short": (
        lambda: (torch.randn(4, 5), torch.randn(6), torch.randn(4)),
        ValueError,
        r"x has shape \(4, 5\) and weight \(6,\)",
    ),
    "grad_y too short": (
        lambda: (torch.randn(4, 5), torch.randn(5), torch.randn(3)),
        ValueError,
        r"grad_y has shape \(3,\) and x2d \(4, 5\): expected grad_y of shape \(rows,\)",
    ),
    "x 3-D": (
        lambda: (torch.randn(2, 4, 5), torch.randn(5), torch.randn(8)),
        ValueError,
        r"x2d has shape \(2, 4, 5\): expected \(rows, D\)",
    ),
    "grad_y float64": (
        lambda: (torch.randn(4, 5), torch.randn(5), torch.randn(4, dtype=torch.float64)),
        TypeError,
        "grad_y is torch.float64 on .*: expected x2d's torch.float32",
    ),
}


@pytest.mark.parametrize("case", list(BAD_BACKWARD_INPUT))
@pytest.mark.parametrize("fake", [False, True], ids=["op", "fake"])
def test_bad_input_to_the_backward_op(case, fake):
    # torch.compile runs the fake on fake tensors: it must refuse what the op refuses.
    make, error, message = BAD_BACKWARD_INPUT[case]
    mode = torch._subclasses.fake_tensor.FakeTensorMode(allow_non_fake_inputs=True)
    with mode if fake else contextlib.nullcontext():
        args = cpu_or_gpu(make)()
        with pytest.raises(error, match=message):
            torch.ops.triton_lessons.weighted_sum_backward(*args)


def test_one_dimensional_x_gives_a_scalar():
    x = torch.randn(40, device=DEVICE, requires_grad=True)
    w = torch.randn(40, device=DEVICE, requires_grad=True)
    y = op.weighted_sum(x, w)
    assert y.shape == ()
    y.backward()
    assert x.grad.shape == (40,) and torch.equal(x.grad, w.detach())
    expected = (x.detach().double() * w.detach().double()).sum()
    common.assert_close(
        y.reshape(1),
        expected.reshape(1),
        (x.abs() * w.abs()).double().sum().reshape(1),
        40,
        "1-D x",
    )


@pytest.mark.parametrize("name", float64_ones(AUTOGRAD))
def test_gradcheck(name):
    x = torch.randn(3, 5, 4, dtype=torch.float64, device=DEVICE, requires_grad=True)
    w = torch.randn(4, dtype=torch.float64, device=DEVICE, requires_grad=True)
    assert torch.autograd.gradcheck(AUTOGRAD[name], (x, w), eps=1e-6, atol=1e-8, rtol=1e-6)


@pytest.mark.parametrize("name", float64_ones(ENTRY_STYLES))
def test_gradgradcheck(name):
    x = torch.randn(3, 5, 4, dtype=torch.float64, device=DEVICE, requires_grad=True)
    w = torch.randn(4, dtype=torch.float64, device=DEVICE, requires_grad=True)
    assert torch.autograd.gradgradcheck(ENTRY_STYLES[name], (x, w), eps=1e-6, atol=1e-8, rtol=1e-6)


def test_the_lessons_function_refuses_a_second_derivative():
    # Its backward launches kernels, which autograd cannot see into: it raises, never a wrong 0.
    x = torch.randn(5, 3, dtype=torch.float64, device=DEVICE, requires_grad=True)
    w = torch.randn(3, dtype=torch.float64, device=DEVICE, requires_grad=True)
    (grad_x,) = torch.autograd.grad(ws.WeightedSum.apply(x, w).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|does not require grad"):
        torch.autograd.grad(grad_x.sum(), w)


def test_gradgradcheck_on_a_batch_that_does_not_flatten_to_a_view():
    # Leading dims that do not merge: x is copied into (rows, D) in the forward and the backward.
    x = torch.randn(5, 3, 4, dtype=torch.float64, device=DEVICE).transpose(0, 1).requires_grad_()
    w = torch.randn(4, dtype=torch.float64, device=DEVICE, requires_grad=True)
    assert torch.autograd.gradgradcheck(op.weighted_sum, (x, w), eps=1e-6, atol=1e-8, rtol=1e-6)


@pytest.mark.parametrize("name", float64_ones(ENTRY_STYLES))
def test_hessian_matches_pytorch(name):
    # The case that used to return zeros: H_ww of (x @ w)^2 summed is 2 x^T x, nothing like 0.
    x = torch.randn(6, 4, dtype=torch.float64, device=DEVICE)
    w = torch.randn(4, dtype=torch.float64, device=DEVICE)
    got = torch.autograd.functional.hessian(
        lambda a, b: (ENTRY_STYLES[name](a, b) ** 2).sum(), (x, w)
    )
    want = torch.autograd.functional.hessian(
        lambda a, b: (forward_reference(a, b) ** 2).sum(), (x, w)
    )
    for got_row, want_row in zip(got, want):
        for h, h_ref in zip(got_row, want_row):
            torch.testing.assert_close(h, h_ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got[1][1], 2 * x.T @ x, rtol=1e-12, atol=1e-12)


def test_second_derivative_with_respect_to_one_input():
    # Only x requires grad: d/dw is never asked for; grad_x = grad_y * w still depends on grad_y.
    x = torch.randn(5, 3, dtype=torch.float64, device=DEVICE, requires_grad=True)
    w = torch.randn(3, dtype=torch.float64, device=DEVICE)
    (grad_x,) = torch.autograd.grad((op.weighted_sum(x, w) ** 2).sum(), x, create_graph=True)
    (hvp,) = torch.autograd.grad(grad_x.sum(), x)
    torch.testing.assert_close(hvp, (2 * w.sum() * w).expand(5, 3))


def test_create_graph_gives_the_same_gradients_as_the_fused_kernel():
    x = torch.randn(300, 72, device=DEVICE, requires_grad=True)
    w = torch.randn(72, device=DEVICE, requires_grad=True)
    g = torch.randn(300, device=DEVICE)
    fused = torch.autograd.grad(op.weighted_sum(x, w), (x, w), g)
    recorded = torch.autograd.grad(op.weighted_sum(x, w), (x, w), g, create_graph=True)
    assert all(r.requires_grad for r in recorded)
    # Each against float64, within the roundoff of its sums (the two add rows in other orders).
    for name, grads in (("fused", fused), ("recorded", recorded)):
        for grad, exact, what in zip(grads, exact_gradients(x, w, g), ("grad_x", "grad_w")):
            common.assert_close(grad, *exact, f"{name} {what}")


def test_gradcheck_the_registered_ops_directly():
    x = torch.randn(6, 3, dtype=torch.float64, device=DEVICE, requires_grad=True)
    w = torch.randn(3, dtype=torch.float64, device=DEVICE, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda a, b: torch.ops.triton_lessons.weighted_sum(a, b, "tuned"), (x, w)
    )
    for style in float64_ones(op.STYLES):  # the op's Function
        assert torch.autograd.gradcheck(lambda a, b: op.WeightedSum.apply(a, b, style), (x, w))


def opcheck_cases():
    on = {"device": DEVICE}
    yield (
        "float16",
        torch.randn(7, 5, dtype=torch.float16, **on),
        torch.randn(5, dtype=torch.float16, **on),
    )
    yield (
        "bfloat16",
        torch.randn(7, 5, dtype=torch.bfloat16, **on),
        torch.randn(5, dtype=torch.bfloat16, **on),
    )
    yield "float32, 3-D", torch.randn(2, 7, 5, **on), torch.randn(5, **on)
    yield (
        "float64",
        torch.randn(7, 5, dtype=torch.float64, **on),
        torch.randn(5, dtype=torch.float64, **on),
    )
    yield "transposed", torch.randn(9, 6, **on).T, torch.randn(9, **on)
    yield "sliced", torch.randn(7, 9, **on)[:, 1:6], torch.randn(10, **on)[::2]
    yield "empty", torch.randn(0, 6, **on), torch.randn(6, **on)


@pytest.mark.parametrize("case", list(opcheck_cases()), ids=lambda case: case[0])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck(case, requires_grad):
    _, x, w = case
    x, w = x.requires_grad_(requires_grad), w.requires_grad_(requires_grad)
    torch.library.opcheck(torch.ops.triton_lessons.weighted_sum.default, (x, w, "tuned"))


def test_opcheck_backward_op():
    x, w, g = (
        torch.randn(9, 6, device=DEVICE).T,
        torch.randn(9, device=DEVICE),
        torch.randn(6, device=DEVICE),
    )
    torch.library.opcheck(torch.ops.triton_lessons.weighted_sum_backward.default, (x, w, g))


def test_compile_forward():
    x = torch.randn(3, 50, 33, device=DEVICE)
    w = torch.randn(33, device=DEVICE)
    y = torch.compile(op.weighted_sum, fullgraph=True)(x, w)
    x64, w64 = x.double(), w.double()
    common.assert_close(
        y, (x64 * w64).sum(-1), (x64.abs() * w64.abs()).sum(-1), 33, "compiled forward"
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_compile_forward_and_backward(dtype):
    x = layout(70, 40, dtype, "transposed").requires_grad_()
    w = torch.randn(40, dtype=dtype, device=DEVICE, requires_grad=True)
    g = torch.randn(70, dtype=dtype, device=DEVICE)

    def loss(a, b):
        return (op.weighted_sum(a, b) * g).sum()

    compiled = torch.compile(loss, fullgraph=True)
    grads = torch.autograd.grad(compiled(x, w), (x, w))
    assert_matches_float64(
        op.weighted_sum(x, w).detach(), grads, x, w, g, f"compiled backward {dtype}"
    )


@pytest.mark.parametrize("name", list(AUTOGRAD))
def test_retain_graph_repeats_exactly(name):
    x = torch.randn(50, 48, device=DEVICE, requires_grad=True)
    w = torch.randn(48, device=DEVICE, requires_grad=True)
    g = torch.randn(50, device=DEVICE)
    y = AUTOGRAD[name](x, w)
    first = torch.autograd.grad(y, (x, w), g, retain_graph=True)
    second = torch.autograd.grad(y, (x, w), g)
    assert all(torch.equal(a, b) for a, b in zip(first, second))


@pytest.mark.parametrize("name", list(wide.VARIANTS))
def test_bitwise_identical_runs(name):
    x = torch.randn(300, 72, device=DEVICE, dtype=torch.bfloat16)
    w = torch.randn(72, device=DEVICE, dtype=torch.bfloat16)
    g = torch.randn(300, device=DEVICE, dtype=torch.bfloat16)
    forward, backward = wide.VARIANTS[name]
    runs = [(forward(x, w), *backward(x, w, g)) for _ in range(2)]
    assert all(torch.equal(a, b) for a, b in zip(*runs))


@pytest.mark.parametrize("name", list(AUTOGRAD))
@pytest.mark.parametrize("needs", [(True, False), (False, True)])
def test_needs_input_grad(name, needs):
    x = torch.randn(33, 20, device=DEVICE, requires_grad=needs[0])
    w = torch.randn(20, device=DEVICE, requires_grad=needs[1])
    g = torch.randn(33, device=DEVICE)
    (grad,) = torch.autograd.grad(AUTOGRAD[name](x, w), [x] if needs[0] else [w], g)
    expected = g[:, None] * w if needs[0] else (x.double() * g.double()[:, None]).sum(0)
    magnitude = (
        expected.abs() if needs[0] else (x.double().abs() * g.double().abs()[:, None]).sum(0)
    )
    common.assert_close(
        grad, expected.double(), magnitude.double(), 1 if needs[0] else 33, f"{name} needs {needs}"
    )


def test_broadcast_grad_output():
    # y.sum().backward() hands backward a grad_y of stride 0.
    x = torch.randn(20, 24, device=DEVICE, requires_grad=True)
    w = torch.randn(24, device=DEVICE, requires_grad=True)
    op.weighted_sum(x, w).sum().backward()
    assert torch.equal(x.grad, w.detach().expand(20, 24))
    expected = x.detach().double().sum(0)
    common.assert_close(
        w.grad, expected, x.detach().double().abs().sum(0), 20, "grad_w with broadcast grad_y"
    )


@pytest.mark.parametrize("how", LAYOUTS)
def test_entry_runs_the_tuned_kernels_on_every_layout(how):
    x = layout(33, 64, torch.float32, how).requires_grad_()
    w = torch.randn(64, device=DEVICE, requires_grad=True)
    grad_y = torch.randn(33, device=DEVICE)
    # op's "tuned" is wide.py's kernels, tuned by the op itself: at one config, the same bits.
    with support.pinned_config(wide, 0), support.pinned_config(op, 0):
        got, want = op.weighted_sum(x, w), wide.forward_wide(x.detach(), w.detach())
        assert torch.equal(got, want) and torch.equal(op.weighted_sum(x.detach(), w.detach()), want)
        grads = torch.autograd.grad(got, (x, w), grad_y)
        wanted = wide.backward_wide(x.detach(), w.detach(), grad_y)
    assert all(torch.equal(g, h) for g, h in zip(grads, wanted))


def test_entry_without_gradients_skips_the_op():
    x, w = torch.randn(8, 16, device=DEVICE), torch.randn(16, device=DEVICE, requires_grad=True)
    assert op.weighted_sum(x, w.detach()).grad_fn is None
    assert op.weighted_sum(x, w).grad_fn is not None
    with torch.no_grad():
        assert op.weighted_sum(x, w).grad_fn is None


def cpu_or_gpu(make):  # make(), built on the CPU, moved to DEVICE
    return lambda: tuple(t.to(DEVICE) if isinstance(t, torch.Tensor) else t for t in make())


BAD_INPUT = {  # case: (arguments, error, message), the same through the entry and the op
    # Expanded, on DEVICE: 2^30 rows or columns with no memory behind them. On an H200, 2^31 +
    # 256 rows ended in an illegal memory access, 2^31 - 1 rows in a wrong backward.
    "2^30 rows": (
        lambda: (
            torch.zeros(1, 1, 1, device=DEVICE).expand(2**15, 2**15, 1),
            torch.zeros(1, device=DEVICE),
        ),
        ValueError,
        r"x has shape \(32768, 32768, 1\): the kernels number rows \(x's leading dims",
    ),
    "2^30 columns": (
        lambda: (
            torch.zeros(1, 1, device=DEVICE).expand(2, 2**30),
            torch.zeros(1, device=DEVICE).expand(2**30),
        ),
        ValueError,
        r"x has shape \(2, 1073741824\): the kernels number rows .* in int32",
    ),
    "weight too short": (
        lambda: (torch.randn(6, 5), torch.randn(4)),
        ValueError,
        r"x has shape \(6, 5\) and weight \(4,\): x's last dim, D = 5, must be weight's length, 4",
    ),
    "weight 2-D": (
        lambda: (torch.randn(4, 8), torch.randn(1, 8)),
        ValueError,
        r"x has shape \(4, 8\) and weight \(1, 8\).*weight of shape \(D,\)",
    ),
    "weight (4, 1)": (
        lambda: (torch.randn(6, 4), torch.randn(4, 1)),
        ValueError,
        "weight of shape",
    ),
    "0-d x": (
        lambda: (torch.tensor(1.0), torch.randn(1)),
        ValueError,
        r"x has shape \(\) .*at least 1-D",
    ),
    "int32": (
        lambda: (torch.ones(4, 8, dtype=torch.int32), torch.ones(8, dtype=torch.int32)),
        TypeError,
        "x is torch.int32; expected one of",
    ),
    "int64 weight": (
        lambda: (torch.ones(4, 8), torch.ones(8, dtype=torch.int64)),
        TypeError,
        "weight is torch.int64; expected one of",
    ),
    "bool": (
        lambda: (torch.ones(4, 8, dtype=torch.bool), torch.ones(8, dtype=torch.bool)),
        TypeError,
        "x is torch.bool",
    ),
    "mixed dtypes": (
        lambda: (torch.randn(4, 8), torch.randn(8, dtype=torch.float16)),
        TypeError,
        "x is torch.float32 but weight is torch.float16",
    ),
    "unknown style": (
        lambda: (torch.randn(2, 3), torch.randn(3), "nope"),
        ValueError,
        "style 'nope' is not one of",
    ),
    "simple in float64": (
        lambda: (
            torch.randn(2, 3, dtype=torch.float64),
            torch.randn(3, dtype=torch.float64),
            "simple",
        ),
        TypeError,
        "style 'simple' sums in float32 only",
    ),
}


@pytest.mark.parametrize("shape, strides", [((2, 3), (2**31, 1)), ((2**20 + 1, 2**11), (0, 1))])
def test_simple_style_refuses_offsets_past_2_to_the_31(shape, strides):
    # Fake tensors: the strides of an x that spans over 2^31 elements (or whose grad_x does: the
    # second, expanded), with no memory behind them.
    with torch._subclasses.fake_tensor.FakeTensorMode():
        x = torch.empty_strided(shape, strides, device=DEVICE)
        w = torch.empty(shape[-1], device=DEVICE)
        with pytest.raises(ValueError, match="style 'simple' keeps offsets in int32"):
            op.validate(x, w, "simple")
        assert op.validate(x, w, "tuned") == shape[:-1]


@pytest.mark.parametrize("case", list(BAD_INPUT))
@pytest.mark.parametrize("entry", ["weighted_sum", "torch.ops.triton_lessons.weighted_sum"])
def test_bad_input_gives_the_same_error_through_the_entry_and_the_op(case, entry):
    make, error, message = BAD_INPUT[case]
    args = cpu_or_gpu(make)()
    with pytest.raises(error, match=message):
        if entry == "weighted_sum":  # style is a keyword of the entry, after out
            op.weighted_sum(*args[:2], style=args[2] if len(args) > 2 else "tuned")
        else:
            torch.ops.triton_lessons.weighted_sum(*args)


def test_rows_just_under_2_to_the_30_are_taken():
    x, w = torch.zeros(1, 1, 1, device=DEVICE), torch.zeros(1, device=DEVICE)
    assert op.validate(x.expand(2**15 - 1, 2**15 + 1, 1), w) == (2**15 - 1, 2**15 + 1)


def test_the_lessons_function_asserts_that_d_matches():
    # A shorter w would be read past its end: the Function's one-line assert stops it.
    with pytest.raises(AssertionError, match=r"x \(\.\.\., D\) needs w of shape \(D,\)"):
        ws.WeightedSum.apply(torch.randn(4, 8, device=DEVICE), torch.randn(7, device=DEVICE))


def test_a_negated_view_is_refused_by_the_entry_and_resolved_by_the_op():
    # The imaginary part of a conjugate holds its memory's values with the signs flipped
    # (is_neg()): a kernel would read the memory. The entry names it (x, weight, out); the
    # registered op gets it resolved by PyTorch's dispatcher, and is right.
    x, w = (
        torch.randn(40, 3, dtype=torch.cfloat, device=DEVICE).conj().imag,
        torch.randn(3, device=DEVICE),
    )
    for _ in range(2):  # a layout refused keeps no plan
        with pytest.raises(ValueError, match=r"x is a negated view \(is_neg\(\)\)"):
            op.weighted_sum(x, w)
    with pytest.raises(ValueError, match="weight is a negated view"):
        op.weighted_sum(
            x.resolve_neg(), torch.randn(3, dtype=torch.cfloat, device=DEVICE).conj().imag
        )
    with pytest.raises(ValueError, match="out is a negated view"):
        op.weighted_sum(
            x.resolve_neg(), w, out=torch.randn(40, dtype=torch.cfloat, device=DEVICE).conj().imag
        )
    x64, w64 = x.resolve_neg().double(), w.double()
    y = torch.ops.triton_lessons.weighted_sum(x, w)
    common.assert_close(y, x64 @ w64, x64.abs() @ w64.abs(), 3, "the op")
    # A gradient handed to the backward as a negated view: refused, as the inputs are
    x = x.resolve_neg().requires_grad_()
    grad_y = torch.randn(40, dtype=torch.cfloat, device=DEVICE).conj().imag
    with pytest.raises(ValueError, match="grad_y is a negated view"):
        op.weighted_sum(x, w).backward(grad_y)


def test_not_a_tensor():
    with pytest.raises(TypeError, match="weight must be a torch.Tensor, got list"):
        op.weighted_sum(torch.randn(2, 3, device=DEVICE), [1.0, 2.0, 3.0])


def test_check_catches_an_output_element_left_unwritten():
    # check() makes every uninitialised output NaN: a kernel that forgets one row cannot pass.
    def forgets_the_last_row(x2d, weight):
        y = torch.empty(x2d.shape[0], dtype=x2d.dtype, device=x2d.device)
        y[:-1] = (x2d[:-1] * weight).sum(-1)
        return y

    broken = {"simple": (forgets_the_last_row, ws.backward_simple)}
    message = r"simple y on x \(9, 8\).*: 1 of 9 elements off.*got nan"
    with pytest.raises(AssertionError, match=message):
        ws.check_variants(layout(9, 8), wide.VARIANTS | broken)


@pytest.mark.parametrize("wrong", ["grad_w halved", "grad_x rows reversed"])
def test_check_catches_a_wrong_gradient(wrong):
    def wrong_backward(x2d, weight, grad_y):
        grad_x, grad_w = ws.backward_simple(x2d, weight, grad_y)
        if wrong == "grad_w halved":
            return grad_x, grad_w / 2
        return grad_x.flip(0), grad_w

    broken = {"simple": (ws.forward_simple, wrong_backward)}
    message = (
        "grad_w on x .* elements off" if wrong == "grad_w halved" else "grad_x on x .* elements off"
    )
    with pytest.raises(AssertionError, match=message):
        ws.check_variants(layout(40, 8, torch.bfloat16), broken)


def test_wrong_device_type():
    with pytest.raises(ValueError, match="x is on meta and weight on meta: both must be on"):
        op.weighted_sum(torch.randn(4, 8, device="meta"), torch.randn(8, device="meta"))


def test_different_devices():
    with pytest.raises(ValueError, match="x is on .* and weight on meta"):
        op.weighted_sum(torch.randn(4, 8, device=DEVICE), torch.randn(8, device="meta"))


@support.gpu_only
def test_cpu_tensors_on_a_gpu_machine():
    with pytest.raises(ValueError, match="x is on cpu and weight on cpu: both must be on cuda"):
        op.weighted_sum(torch.randn(4, 8), torch.randn(8))


@pytest.mark.parametrize("lesson", [ws, wide], ids=["main.py", "wide.py"])
def test_main_runs(capsys, recwarn, lesson):
    assert lesson.main(["--rows", "40", "--dim", "5", "--dtype", "float16"]) == 0
    # On a GPU benchmark() captures a CUDA graph: no autograd node may run on another stream.
    assert not [w for w in recwarn if "stream does not match" in str(w.message)]
    out = capsys.readouterr().out
    names = list(lesson.VARIANTS)
    assert f"check passed: y, grad_x and grad_w of {', '.join(names)}\n" in out
    assert "WeightedSum.apply(x, w).sum().backward(): each row of x.grad == w: True\n" in out
    bare = "forward_wide_kernel" if lesson is wide else "forward_kernel"
    for row in ["torch fwd", f"{bare}[grid] bare fwd", "torch bwd"]:
        assert row in out
    for name in names:
        assert f"{name} fwd" in out and f"{name} bwd" in out


def test_wide_py_adds_its_kernels_to_the_lessons_styles():
    assert list(ws.VARIANTS) == ["simple", "tuned"]
    assert list(wide.VARIANTS) == ["simple", "tuned", "wide"]
    assert wide.CONFIGS is ws.CONFIGS  # one list of tiles for all the tuned kernels


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit) as exit_info:
        ws.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert (
        "(default: float32)" in out and f"(default: {1000 if common.INTERPRETED else 65536})" in out
    )


@pytest.mark.parametrize(
    "argv", [["--rows", "-1"], ["--rows", "0"], ["--dim", "-3"], ["--dim", "0"]]
)
def test_bad_sizes_are_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        ws.main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "--rows and --dim must be >= 1" in err


def test_the_lessons_dtypes_are_those_every_variant_sums_right():
    # The first kernels sum in float32: a float64 x is the op's (style "tuned"), not main()'s.
    assert list(ws.DTYPES) == ["float16", "bfloat16", "float32"]


@support.gpu_only
def test_capture_in_a_cuda_graph():
    x = torch.randn(300, 72, device=DEVICE, requires_grad=True)
    w = torch.randn(72, device=DEVICE, requires_grad=True)
    g = torch.randn(300, device=DEVICE)
    results = {}

    def step():
        y = op.weighted_sum(x, w)
        results["y"], results["grads"] = y, torch.autograd.grad(y, (x, w), g)

    graph = common.capture_graph(step)
    with torch.no_grad():
        x.copy_(torch.randn_like(x))
        w.copy_(torch.randn_like(w))
    graph.replay()
    torch.cuda.synchronize()
    assert_matches_float64(results["y"].detach(), results["grads"], x, w, g, "graph replay")


@support.gpu_only
def test_side_stream():
    x = torch.randn(300, 72, device=DEVICE, requires_grad=True)
    w = torch.randn(72, device=DEVICE, requires_grad=True)
    g = torch.randn(300, device=DEVICE)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        y = op.weighted_sum(x, w)
        grads = torch.autograd.grad(y, (x, w), g)
    torch.cuda.current_stream().wait_stream(stream)
    assert_matches_float64(y.detach(), grads, x, w, g, "side stream")


@support.gpu_only
@pytest.mark.parametrize(
    "rows, d, dtype",
    [(65536, 1024, torch.float32), (4097, 4096, torch.bfloat16), (65536, 1000, torch.float16)],
)
def test_large_gpu(rows, d, dtype):
    assert ws.check_variants(layout(rows, d, dtype), wide.VARIANTS) == list(wide.VARIANTS)


@support.gpu_only
@pytest.mark.parametrize("name", list(wide.VARIANTS))
def test_more_than_2_to_the_31_elements(name):
    # 2^23 + 5 rows of 256: 2^31 + 1280 elements, bfloat16 (4.3 GB for x, as much for grad_x).
    # Offsets of the last rows only fit in int64; the float64 reference covers the last rows and
    # grad_w is compared against a float64 sum taken in chunks.
    rows, d = (1 << 23) + 5, 256
    torch.manual_seed(0)
    x = torch.randn(rows, d, device=DEVICE, dtype=torch.bfloat16)
    w = torch.randn(d, device=DEVICE, dtype=torch.bfloat16)
    g = torch.randn(rows, device=DEVICE, dtype=torch.bfloat16)
    forward, backward = wide.VARIANTS[name]
    if name in ("simple", "tuned"):  # int32 offsets: Parts 1 to 3 refuse, never misread memory
        for call in (lambda: forward(x, w), lambda: backward(x, w, g)):
            with pytest.raises(AssertionError, match="see wide.py"):
                call()
        return
    y = forward(x, w)
    grad_x, grad_w = backward(x, w, g)
    tail = slice(rows - 1000, rows)
    x_tail, w64, g_tail = x.detach()[tail].double(), w.detach().double(), g[tail].double()
    common.assert_close(
        y[tail], (x_tail * w64).sum(-1), (x_tail.abs() * w64.abs()).sum(-1), d, f"{name} y tail"
    )
    common.assert_close(
        grad_x[tail], g_tail[:, None] * w64, (g_tail[:, None] * w64).abs(), 1, f"{name} grad_x tail"
    )
    expected = torch.zeros(d, dtype=torch.float64, device=DEVICE)
    magnitude = torch.zeros_like(expected)
    for start in range(0, rows, 1 << 20):
        chunk, g_chunk = (
            x.detach()[start : start + (1 << 20)].double(),
            g[start : start + (1 << 20)].double(),
        )
        expected += g_chunk @ chunk
        magnitude += g_chunk.abs() @ chunk.abs()
    common.assert_close(grad_w, expected, magnitude, rows, f"{name} grad_w")


def test_eager_gradients_skip_the_dispatcher_and_the_op_records_its_backward():
    # Eager calls go through the autograd.Function, which launches the kernels directly; the op's
    # own backward goes through weighted_sum_backward, the node torch.compile records.
    x, w = (
        torch.randn(8, 16, device=DEVICE, requires_grad=True),
        torch.randn(16, device=DEVICE, requires_grad=True),
    )
    assert support.dispatched_ops(lambda: op.weighted_sum(x, w).sum().backward()) == []
    assert support.dispatched_ops(
        lambda: torch.ops.triton_lessons.weighted_sum(x, w).sum().backward()
    ) == ["triton_lessons::weighted_sum", "triton_lessons::weighted_sum_backward"]


@pytest.mark.parametrize("style", op.STYLES)
def test_a_plan_runs_each_new_x_of_its_layout(monkeypatch, style):
    # forward() and backward() plan each layout once (the tiles, the grid, the split) and run
    # the plan for the next inputs of that layout, with their own values; the same shape at an
    # address 4 bytes off 16 is another layout, and so is another style. Outputs and gradients
    # start as NaN: each is written.
    planned = []
    monkeypatch.setattr(op, "PLANS", {})

    def recorded(name):  # op.<name>, noting each plan it makes
        real = getattr(op, name)
        return lambda *args, **kwargs: planned.append(name) or real(*args, **kwargs)

    for name in ("plan_forward", "plan_backward"):
        monkeypatch.setattr(op, name, recorded(name))
    buffer = torch.empty(3 * 40 * 24 + 1, device=DEVICE)
    w = torch.randn(24, device=DEVICE, requires_grad=True)
    for start in (0, 0, 1, 1, 0):
        x = buffer[start : start + 3 * 40 * 24].normal_().view(3, 40, 24).requires_grad_()
        g = torch.randn(3, 40, device=DEVICE)
        with common.uninitialized_memory_is_nan():
            y = op.weighted_sum(x, w, style=style)
            grads = torch.autograd.grad(y, (x, w), g)
        assert_matches_float64(y, grads, x, w, g, f"{style}, x at {start}")
    assert planned == ["plan_forward", "plan_backward"] * 2 and len(op.PLANS) == 4


def test_weighted_sum_validates_once_a_layout(monkeypatch):
    # forward()'s plan checks its inputs once: later calls with new tensors of the same layouts
    # skip validate(); another layout (x's strides, weight's dtype, an empty x) or style checks
    # again, and so does bad input, which leaves no plan.
    checked, real = [], op.validate
    monkeypatch.setattr(op, "validate", lambda *args: checked.append(args) or real(*args))
    monkeypatch.setattr(op, "PLANS", {})
    x, w = torch.randn(40, 24, device=DEVICE), torch.randn(24, device=DEVICE)
    for _ in range(3):
        x.normal_()
        w.normal_()
        with common.uninitialized_memory_is_nan():
            y = op.weighted_sum(x, w)
        x64, w64 = x.double(), w.double()
        common.assert_close(y, x64 @ w64, x64.abs() @ w64.abs(), 24, "y")
    assert len(checked) == 1
    op.weighted_sum(x.T.contiguous().T, w)
    op.weighted_sum(x, w, style="simple")
    assert op.weighted_sum(torch.empty(0, 24, device=DEVICE), w).shape == (0,)
    assert len(checked) == 4
    for _ in range(2):
        with pytest.raises(TypeError, match="x is torch.float32 but weight is torch.float16"):
            op.weighted_sum(x, w.half())
    assert len(checked) == 6 and len(op.PLANS) == 4


@pytest.mark.parametrize("style", op.STYLES)
def test_a_backward_plans_launches_have_their_kinds(monkeypatch, style):
    # On a GPU a plan's launches are keyed by the kind it names (common/launch.py's Named): the
    # tuned backward's second pass launches other arguments, so it names another kind.
    kinds = []
    monkeypatch.setattr(op, "PLANS", {})
    monkeypatch.setattr(
        common, "traceable", lambda kernel, in_op, kind=None: kinds.append(kind) or kernel
    )
    x = torch.randn(300, 24, device=DEVICE, requires_grad=True)
    w = torch.randn(24, device=DEVICE, requires_grad=True)
    g = torch.randn(300, device=DEVICE)
    y = op.weighted_sum(x, w, style=style)
    assert_matches_float64(y, torch.autograd.grad(y, (x, w), g), x, w, g, style)
    forward_key, backward_key = op.PLANS
    assert forward_key[:2] == ("forward", op.STYLES.index(style))
    assert backward_key[:2] == ("backward", style)
    second = [(backward_key, "second pass")] if style == "tuned" else []
    assert kinds == [forward_key, backward_key, *second]
