"""Tests for 04_weighted_sum: forward and backward of every variant, the entry function's choices
and fallbacks, autograd plumbing (gradcheck, needs_input_grad, retain_graph), determinism and bad input."""

import pytest
import torch

import support

ws = support.load("04_weighted_sum")
common = support.common
DEVICE = common.DEVICE
TRITON_STYLES = [name for name in ws.VARIANTS if name != "torch_function"]


@pytest.mark.parametrize(
    "rows, d",
    [(1, 1), (17, 1), (1, 17), (17, 1000), (1000, 17), (1001, 33), (64, 1001), (5, 256)],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sizes(rows, d, dtype):
    checked = ws.check(rows, d, dtype)
    assert "pointer" in checked and "torch_function" in checked


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("layout", ws.LAYOUTS)
def test_dtypes_and_layouts(dtype, layout):
    checked = ws.check(37, 104, dtype, layout)
    # 104 columns are 16-byte multiples in every dtype, so only an odd layout turns the descriptor away.
    assert ("descriptor" in checked) == (layout == "contiguous")
    assert set(checked) >= {"pointer", "torch_function"}


@pytest.mark.parametrize("batch, layout", [((3,), "contiguous"), ((2, 3), "contiguous"), ((3,), "transposed"), ((2, 2), "sliced")])
def test_leading_dims(batch, layout):
    checked = ws.check(7, 40, torch.float32, layout, batch=batch)
    assert "pointer" in checked


@pytest.mark.parametrize("rows, d", [(0, 8), (0, 1), (4, 0)])
def test_empty(rows, d):
    checked = ws.check(rows, d, torch.float32)
    assert set(checked) == set(ws.VARIANTS)


@pytest.mark.parametrize("name", list(ws.VARIANTS))
def test_strided_weight(name):
    x = torch.randn(19, 24, device=DEVICE, requires_grad=True)
    w = torch.randn(48, device=DEVICE)[::2].requires_grad_()
    g = torch.randn(19, device=DEVICE)
    y = ws.VARIANTS[name](x, w)
    grad_x, grad_w = torch.autograd.grad(y, (x, w), g)
    x64, w64, g64 = x.detach().double(), w.detach().double(), g.double()
    common.assert_close(y, (x64 * w64).sum(-1), (x64.abs() * w64.abs()).sum(-1), 24, f"{name} y, strided w")
    common.assert_close(grad_x, (g64[:, None] * w64).float().double(), (g64[:, None] * w64).abs(), 1, f"{name} grad_x")
    common.assert_close(grad_w, g64 @ x64, g64.abs() @ x64.abs(), 19, f"{name} grad_w, strided w")


@pytest.mark.parametrize("programs, d", [(1, 1), (17, 33), (1000, 17), (1001, 1), (1500, 40)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sum_partials(programs, d, dtype):
    # The second pass alone, on buffers shorter and taller than one step of it (SUM_PARTIALS_MAX_ROWS).
    partial = torch.randn(programs, d, device=DEVICE)
    grad_w = torch.full((d,), float("nan"), dtype=dtype, device=DEVICE)
    ws.sum_partials(partial, grad_w)
    p64 = partial.double()
    common.assert_close(grad_w, p64.sum(0), p64.abs().sum(0), programs, f"sum_partials {programs}x{d} -> {dtype}")


def test_one_dimensional_x_gives_a_scalar():
    x = torch.randn(40, device=DEVICE, requires_grad=True)
    w = torch.randn(40, device=DEVICE, requires_grad=True)
    y = ws.weighted_sum(x, w)
    assert y.shape == ()
    y.backward()
    assert x.grad.shape == (40,) and torch.equal(x.grad, w.detach())
    expected = (x.detach().double() * w.detach().double()).sum()
    common.assert_close(y.reshape(1), expected.reshape(1), (x.abs() * w.abs()).double().sum().reshape(1), 40, "1-D x")


@pytest.mark.parametrize("name", list(ws.VARIANTS))
def test_gradcheck(name):
    # D = 4 in float64 is 32 bytes a row: the descriptor variant takes it too.
    x = torch.randn(3, 5, 4, dtype=torch.float64, device=DEVICE, requires_grad=True)
    w = torch.randn(4, dtype=torch.float64, device=DEVICE, requires_grad=True)
    assert torch.autograd.gradcheck(ws.VARIANTS[name], (x, w), eps=1e-6, atol=1e-8, rtol=1e-6)


def test_gradcheck_functions_directly():
    x = torch.randn(6, 3, dtype=torch.float64, device=DEVICE, requires_grad=True)
    w = torch.randn(3, dtype=torch.float64, device=DEVICE, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: ws.WeightedSum.apply(a, b, "pointer", False), (x, w))
    assert torch.autograd.gradcheck(lambda a, b: ws.WeightedSumTorch.apply(a, b, False), (x, w))


@pytest.mark.parametrize("name", list(ws.VARIANTS))
def test_retain_graph_repeats_exactly(name):
    x = torch.randn(50, 48, device=DEVICE, requires_grad=True)
    w = torch.randn(48, device=DEVICE, requires_grad=True)
    g = torch.randn(50, device=DEVICE)
    y = ws.VARIANTS[name](x, w)
    first = torch.autograd.grad(y, (x, w), g, retain_graph=True)
    second = torch.autograd.grad(y, (x, w), g)
    assert all(torch.equal(a, b) for a, b in zip(first, second))


@pytest.mark.parametrize("name", list(ws.VARIANTS))
def test_bitwise_identical_runs(name):
    x = torch.randn(300, 72, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(72, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(300, device=DEVICE, dtype=torch.bfloat16)
    runs = []
    for _ in range(2):
        y = ws.VARIANTS[name](x, w)
        runs.append((y, *torch.autograd.grad(y, (x, w), g)))
    assert all(torch.equal(a, b) for a, b in zip(*runs))


@pytest.mark.parametrize("needs", [(True, False), (False, True)])
def test_needs_input_grad(needs):
    x = torch.randn(33, 20, device=DEVICE, requires_grad=needs[0])
    w = torch.randn(20, device=DEVICE, requires_grad=needs[1])
    g = torch.randn(33, device=DEVICE)
    y = ws.VARIANTS["pointer"](x, w)
    (grad,) = torch.autograd.grad(y, [x] if needs[0] else [w], g)
    expected = g[:, None] * w if needs[0] else (x.double() * g.double()[:, None]).sum(0)
    magnitude = expected.abs() if needs[0] else (x.double().abs() * g.double().abs()[:, None]).sum(0)
    common.assert_close(grad, expected.double(), magnitude.double(), 1 if needs[0] else 33, f"needs {needs}")


def test_broadcast_grad_output():
    # y.sum().backward() hands backward a grad_y of stride 0.
    x = torch.randn(20, 24, device=DEVICE, requires_grad=True)
    w = torch.randn(24, device=DEVICE, requires_grad=True)
    ws.weighted_sum(x, w).sum().backward()
    assert torch.equal(x.grad, w.detach().expand(20, 24))
    expected = x.detach().double().sum(0)
    common.assert_close(w.grad, expected, x.detach().double().abs().sum(0), 20, "grad_w with broadcast grad_y")


@pytest.mark.parametrize("layout", ws.LAYOUTS)
def test_entry_runs_the_pointer_kernels_on_every_layout(layout):
    x = ws.make_input(33, 64, torch.float32, layout).requires_grad_()
    w = torch.randn(64, device=DEVICE, requires_grad=True)
    grad_y = torch.randn(33, device=DEVICE)
    got = ws.weighted_sum(x, w)
    want = ws.VARIANTS[ws.ENTRY_STYLE](x, w)
    assert torch.equal(got, want)
    assert all(torch.equal(g, h) for g, h in zip(torch.autograd.grad(got, (x, w), grad_y), torch.autograd.grad(want, (x, w), grad_y)))


@pytest.mark.parametrize("make_x", [lambda: torch.randn(9, 5, device=DEVICE), lambda: torch.randn(9, 70, device=DEVICE)[:, 3:67]])
def test_entry_falls_back_and_descriptor_refuses(make_x):
    x = make_x()
    w = torch.randn(x.shape[-1], device=DEVICE)
    with pytest.raises(ValueError, match="'descriptor' variant cannot take x of shape"):
        ws.VARIANTS["descriptor"](x, w)
    expected = (x.double() * w.double()).sum(-1)
    common.assert_close(ws.weighted_sum(x, w), expected, (x.abs() * w.abs()).double().sum(-1), x.shape[-1], "fallback")


def test_weight_not_one_dimensional():
    with pytest.raises(ValueError, match=r"weight must be 1-D.*\(1, 8\)"):
        ws.weighted_sum(torch.randn(4, 8, device=DEVICE), torch.randn(1, 8, device=DEVICE))


def test_zero_dimensional_x():
    with pytest.raises(ValueError, match="at least one dimension"):
        ws.weighted_sum(torch.tensor(1.0, device=DEVICE), torch.randn(1, device=DEVICE))


@pytest.mark.parametrize("name", list(ws.VARIANTS))
def test_d_mismatch(name):
    with pytest.raises(ValueError, match=r"x has shape \(4, 8\) \(D = 8\) but weight has shape \(7,\)"):
        ws.VARIANTS[name](torch.randn(4, 8, device=DEVICE), torch.randn(7, device=DEVICE))


def test_mismatched_dtypes():
    with pytest.raises(TypeError, match="x is torch.float32 but weight is torch.float16"):
        ws.weighted_sum(torch.randn(4, 8, device=DEVICE), torch.randn(8, device=DEVICE, dtype=torch.float16))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool])
def test_integer_dtypes(dtype):
    with pytest.raises(TypeError, match=f"x is {dtype}; expected a floating-point dtype"):
        ws.weighted_sum(torch.ones(4, 8, device=DEVICE, dtype=dtype), torch.ones(8, device=DEVICE, dtype=dtype))


def test_not_a_tensor():
    with pytest.raises(TypeError, match="weight must be a torch.Tensor, got list"):
        ws.weighted_sum(torch.randn(2, 3, device=DEVICE), [1.0, 2.0, 3.0])


def test_wrong_device_type():
    with pytest.raises(ValueError, match="are on meta, but the kernels here run on"):
        ws.weighted_sum(torch.randn(4, 8, device="meta"), torch.randn(8, device="meta"))


def test_different_devices():
    with pytest.raises(ValueError, match="x is on .* but weight is on meta"):
        ws.weighted_sum(torch.randn(4, 8, device=DEVICE), torch.randn(8, device="meta"))


@support.gpu_only
def test_cpu_tensors_on_a_gpu_machine():
    with pytest.raises(ValueError, match="are on cpu, but the kernels here run on cuda"):
        ws.weighted_sum(torch.randn(4, 8), torch.randn(8))


def test_main_runs(capsys):
    assert ws.main(["--rows", "40", "--dim", "24", "--dtype", "float16"]) == 0
    out = capsys.readouterr().out
    assert "check passed" in out and "weighted_sum runs the 'pointer' kernels" in out and "torch bwd" in out


@support.gpu_only
@pytest.mark.parametrize("rows, d, dtype", [(65536, 1024, torch.float32), (4097, 4096, torch.bfloat16), (65536, 1000, torch.float16)])
def test_large_gpu(rows, d, dtype):
    assert ws.check(rows, d, dtype) == list(ws.VARIANTS)


@support.gpu_only
@pytest.mark.parametrize("name", [n for n in ws.VARIANTS if n != "torch_function"])
def test_more_than_2_to_the_31_elements(name):
    # 2^23 + 5 rows of 256: 2^31 + 1280 elements, bfloat16 (4.3 GB for x, as much for grad_x).
    # Offsets of the last rows only fit in int64; the float64 reference covers the last rows and
    # grad_w is compared against a float64 sum taken in chunks.
    rows, d = (1 << 23) + 5, 256
    torch.manual_seed(0)
    x = torch.randn(rows, d, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(d, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(rows, device=DEVICE, dtype=torch.bfloat16)
    y = ws.VARIANTS[name](x, w)
    grad_x, grad_w = torch.autograd.grad(y, (x, w), g)
    tail = slice(rows - 1000, rows)
    x_tail, w64, g_tail = x.detach()[tail].double(), w.detach().double(), g[tail].double()
    common.assert_close(y[tail], (x_tail * w64).sum(-1), (x_tail.abs() * w64.abs()).sum(-1), d, f"{name} y tail")
    common.assert_close(grad_x[tail], g_tail[:, None] * w64, (g_tail[:, None] * w64).abs(), 1, f"{name} grad_x tail")
    expected = torch.zeros(d, dtype=torch.float64, device=DEVICE)
    magnitude = torch.zeros_like(expected)
    for start in range(0, rows, 1 << 20):
        chunk, g_chunk = x.detach()[start : start + (1 << 20)].double(), g[start : start + (1 << 20)].double()
        expected += g_chunk @ chunk
        magnitude += g_chunk.abs() @ chunk.abs()
    common.assert_close(grad_w, expected, magnitude, rows, f"{name} grad_w")
