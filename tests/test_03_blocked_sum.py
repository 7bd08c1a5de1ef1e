import pytest
import torch

import support
from support import common

ex = support.load("03_blocked_sum")

VARIANT_NAMES = list(ex.VARIANTS)
ALL_NAMES = ["blocked_sum", *VARIANT_NAMES]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def function(name):
    return ex.blocked_sum if name == "blocked_sum" else ex.VARIANTS[name]


def assert_sums(result, x, what):
    common.assert_close(result, x.double().sum(0), x.double().abs().sum(0), x.shape[0], what)


@pytest.mark.skipif(common.block_pointers_unavailable() is None, reason="block pointers run on this Triton")
def test_block_ptr_variant_refuses_where_block_pointers_are_gone():
    x = torch.randn(4, 4, device=common.DEVICE)
    with pytest.raises(ValueError, match="block_ptr variant cannot run"):
        ex.blocked_sum_block_ptr(x)


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize(
    "m, n",
    [
        (1, 1),
        (1, 17),  # M = 1: one row, nothing to add
        (17, 1),  # N = 1: one column (row stride 4 bytes: no descriptor)
        (17, 17),
        (1000, 17),  # tall: several row splits, the last one short
        (17, 1000),  # wide: many column blocks, the last one masked
        (1001, 33),
        (100, 1001),
        (64, 64),  # every tile full, no masked edge
    ],
)
def test_sizes(name, m, n):
    checked = ex.check(m, n, torch.float32, variants=[name])
    if name != "descriptor" or n % 4 == 0:  # a descriptor needs rows of 16-byte multiples
        assert checked == [name]


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_dtypes(name, dtype):
    assert ex.check(300, 40, dtype, variants=[name]) == [name]


@support.gpu_only
@pytest.mark.parametrize("index", range(support.most_configs(ex)))
def test_every_config_on_gpu(index):
    # The other tests tune between two configs per kernel (support.load): here each kernel runs its config
    # `index`, on a matrix whose rows are split (two passes) and descriptor-aligned.
    max_side = ex.column_sum_descriptor_kernel.early_config_prune.keywords["max_side"]  # the lesson's TMA limit
    with support.pinned_config(ex, index) as pinned:
        tile = pinned["column_sum_descriptor_kernel"].kwargs
        names = [name for name in ALL_NAMES if name != "descriptor" or max(tile["BLOCK_M"], tile["BLOCK_N"]) <= max_side]
        assert ex.plan_splits(1000, 1100)[0] > 1
        assert ex.check(1000, 1100, variants=names) == names


@pytest.mark.parametrize("dtype", FLOATS)
def test_output_keeps_the_input_dtype_and_shape(dtype):
    x = torch.randn(50, 9, device=common.DEVICE).to(dtype)
    result = ex.blocked_sum(x)
    assert result.dtype == dtype and result.shape == (9,)


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("layout", ["transposed", "sliced", "every_other_row"])
def test_strided_views(name, layout):
    # The pointer and block_ptr variants honour any strides; the descriptor is left out by check()
    # where the view breaks its alignment rules (its refusal is tested below).
    checked = ex.check(300, 40, torch.float32, layout=layout, variants=[name])
    if name != "descriptor":
        assert checked == [name]


def test_every_other_row_is_descriptor_aligned():
    # Row stride 2 * 40 floats = 320 bytes: a multiple of 16, so a descriptor can read this view.
    assert ex.check(300, 40, torch.float32, layout="every_other_row", variants=["descriptor"]) == ["descriptor"]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_half_precision_accumulates_in_float32(name):
    # 2048 copies of 1 + 2^-10: the exact sum 2050 is a float16 number and float32 adds them
    # exactly, but a float16 running sum drops the 2^-10 once it passes 2.
    x = torch.full((2048, 8), 1 + 2.0**-10, dtype=torch.float16, device=common.DEVICE)
    assert torch.equal(function(name)(x), torch.full((8,), 2050.0, dtype=torch.float16, device=common.DEVICE))


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("m, n", [(0, 5), (0, 1), (5, 0), (0, 0)])
def test_empty_inputs(name, m, n):
    x = torch.randn(m, n, device=common.DEVICE)
    out = torch.full((n,), float("nan"), device=common.DEVICE)
    result = function(name)(x, out=out)
    assert result is out
    assert torch.equal(result, torch.zeros(n, device=common.DEVICE))  # the sum of no rows is 0; no columns give []
    assert torch.equal(ex.blocked_sum(x), torch.zeros(n, device=common.DEVICE))


def test_out_is_written_and_returned():
    x = torch.randn(70, 12, device=common.DEVICE)
    out = torch.full((12,), float("nan"), device=common.DEVICE)
    assert ex.blocked_sum(x, out=out) is out
    assert_sums(out, x, "out=")


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("m, n, which", [(12, 12, "row"), (12, 12, "column"), (1000, 16, "row")])
def test_out_that_aliases_x_gets_the_right_answer(name, m, n, which):
    # torch.sum(x, 0, out=x[0]) is right too: the sums go to a fresh buffer first, then into out.
    x = torch.randn(m, n, device=common.DEVICE)
    expected = x.clone()
    out = x[3] if which == "row" else x[:, 5]  # a contiguous row, or a strided column, of x itself
    assert function(name)(x, out=out) is out
    assert_sums(out, expected, f"{name} out=x {which}")


@pytest.mark.parametrize("name", ALL_NAMES)
def test_strided_out_gets_the_right_answer(name):
    x = torch.randn(300, 12, device=common.DEVICE)
    buffer = torch.full((24,), float("nan"), device=common.DEVICE)
    out = buffer[::2]
    assert function(name)(x, out=out) is out
    assert_sums(out, x, f"{name} out with stride 2")
    assert buffer[1::2].isnan().all()  # the elements between are untouched


@pytest.mark.parametrize("name", ALL_NAMES)
def test_out_with_stride_0_is_refused(name):
    x = torch.randn(30, 12, device=common.DEVICE)
    with pytest.raises(ValueError, match=r"strides \(0,\).*share one memory location"):
        function(name)(x, out=torch.empty(1, device=common.DEVICE).expand(12))


def test_out_is_refused_when_x_requires_grad():
    x = torch.randn(30, 12, device=common.DEVICE, requires_grad=True)
    with pytest.raises(ValueError, match="not differentiable"):
        ex.blocked_sum(x, out=torch.empty(12, device=common.DEVICE))


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_split_path_is_deterministic(name):
    x = torch.randn(1000, 20, device=common.DEVICE)
    splits, _, _ = ex.plan_splits(1000, 20)
    assert splits > 1
    assert torch.equal(ex.VARIANTS[name](x), ex.VARIANTS[name](x))


@pytest.mark.parametrize(
    "m, n",
    [(1, 1), (0, 3), (31, 5), (1000, 17), (1048576, 64), (16384, 8192), (2048, 65536), (64, 1048576), (10**6, 1)],
)
def test_plan_splits_covers_every_row(m, n):
    splits, rows_per_split, reason = ex.plan_splits(m, n)
    assert splits >= 1 and reason.startswith(f"splits={splits}")
    if splits == 1:
        assert rows_per_split >= m
    else:
        assert rows_per_split % ex.ROW_ALIGN == 0  # no tile crosses two splits
        assert (splits - 1) * rows_per_split < m <= splits * rows_per_split  # every row, no empty split
        assert splits <= 65535  # grid axis 1 limit


def test_plan_splits_splits_tall_inputs_but_not_wide_ones():
    assert ex.plan_splits(1048576, 64)[0] > 1
    assert ex.plan_splits(64, 1048576)[0] == 1


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_descriptor_refuses_unaligned_views(layout):
    x = ex.LAYOUTS[layout](40, 20, torch.float32)
    with pytest.raises(ValueError, match="descriptor variant cannot take"):
        ex.blocked_sum_descriptor(x)
    assert_sums(ex.blocked_sum(x), x, f"blocked_sum on a {layout} view")


@pytest.mark.parametrize("n, dtype", [(10, torch.float32), (333, torch.float32), (1, torch.float64), (12, torch.float16)])
def test_descriptor_refuses_unaligned_row_strides(n, dtype):
    x = torch.randn(8, n, device=common.DEVICE).to(dtype)
    with pytest.raises(ValueError, match="not a multiple of 16"):
        ex.blocked_sum_descriptor(x)
    assert ex.check(8, n, dtype, layout="contiguous", variants=["blocked_sum"]) == ["blocked_sum"]


def test_descriptor_refuses_an_unaligned_base():
    x = torch.randn(8 * 16 + 1, device=common.DEVICE)[1:].view(8, 16)
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        ex.blocked_sum_descriptor(x)


@pytest.mark.parametrize("layout", list(ex.LAYOUTS))
def test_entry_runs_the_pointer_kernels_on_any_layout(layout):
    x = ex.LAYOUTS[layout](1000, 16, torch.float32)
    assert torch.equal(ex.blocked_sum(x), ex.blocked_sum_pointer(x))  # same kernels, same bits


@pytest.mark.parametrize("name", ALL_NAMES)
def test_bad_inputs(name):
    fn = function(name)
    with pytest.raises(TypeError, match="expects a torch.Tensor"):
        fn([[1.0, 2.0]])
    with pytest.raises(TypeError, match="torch.int32"):
        fn(torch.ones(3, 4, dtype=torch.int32, device=common.DEVICE))
    with pytest.raises(ValueError, match=r"2-D tensor, got shape \(3,\)"):
        fn(torch.ones(3, device=common.DEVICE))
    with pytest.raises(ValueError, match=r"2-D tensor, got shape \(2, 3, 4\)"):
        fn(torch.ones(2, 3, 4, device=common.DEVICE))
    with pytest.raises(ValueError, match=rf"^{fn.__name__}: x is on meta"):  # names the function called
        fn(torch.ones(3, 4, device="meta"))
    x = torch.ones(3, 4, device=common.DEVICE)
    with pytest.raises(ValueError, match=r"out .*\(5,\).*expected \(4,\)"):
        fn(x, out=torch.empty(5, device=common.DEVICE))
    with pytest.raises(ValueError, match=r"out .*torch.float64.*expected .*torch.float32"):
        fn(x, out=torch.empty(4, dtype=torch.float64, device=common.DEVICE))
    with pytest.raises(TypeError, match="out must be a torch.Tensor, got list"):
        fn(x, out=[0.0] * 4)


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_variants_refuse_inputs_that_require_grad(name):
    # The variants are plain launches; silently dropping the gradient would be a wrong answer.
    x = torch.randn(8, 16, device=common.DEVICE, requires_grad=True)
    with pytest.raises(ValueError, match="requires grad: call blocked_sum"):
        ex.VARIANTS[name](x)
    with torch.no_grad():
        assert not ex.VARIANTS[name](x).requires_grad


def test_check_rejects_an_unknown_layout():
    with pytest.raises(ValueError, match="unknown layout"):
        ex.check(4, 4, torch.float32, layout="diagonal")


def test_check_catches_a_wrong_answer():
    def off_by_one_row(x, out=None, poison=False):
        return ex.blocked_sum_pointer(x[1:], out=out, poison=poison)

    ex.VARIANTS["broken"] = off_by_one_row
    try:
        with pytest.raises(AssertionError, match="broken"):
            ex.check(50, 7, torch.float32, variants=["broken"])
    finally:
        del ex.VARIANTS["broken"]


# --- Gradients and the registered op -------------------------------------------------------------


@pytest.mark.parametrize("m, n, fast", [(5, 4, False), (65, 3, True)])  # 65 x 3 splits the rows on the CPU
def test_gradcheck_float64(m, n, fast):
    x = torch.randn(m, n, dtype=torch.float64, device=common.DEVICE, requires_grad=True)
    assert torch.autograd.gradcheck(ex.blocked_sum, (x,), fast_mode=fast)
    assert torch.autograd.gradgradcheck(ex.blocked_sum, (x,), fast_mode=fast)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_gradient_of_inputs_that_require_grad(dtype, layout):
    x = ex.LAYOUTS[layout](1000, 24, dtype).requires_grad_()
    y = ex.blocked_sum(x)
    assert y.requires_grad and y.dtype == dtype
    assert_sums(y, x.detach(), f"forward with requires_grad {dtype}")
    grad_out = torch.randn(24, dtype=dtype, device=common.DEVICE)
    (grad_x,) = torch.autograd.grad(y, x, grad_out)
    assert grad_x.dtype == dtype and torch.equal(grad_x, grad_out.expand(1000, 24))  # d out[j] / d x[i, j] = 1


def test_gradient_flows_through_a_larger_graph():
    x = torch.randn(40, 6, dtype=torch.float64, device=common.DEVICE, requires_grad=True)
    (ex.blocked_sum(x * 2) ** 2).sum().backward()
    expected = x.detach().clone().requires_grad_()
    ((expected * 2).sum(0) ** 2).sum().backward()
    torch.testing.assert_close(x.grad, expected.grad)


@pytest.mark.parametrize(
    "x",
    [
        pytest.param(lambda: torch.randn(40, 24, device=common.DEVICE), id="float32"),
        pytest.param(lambda: torch.randn(300, 8, device=common.DEVICE, dtype=torch.bfloat16), id="bfloat16-split"),
        pytest.param(lambda: torch.randn(30, 20, device=common.DEVICE, dtype=torch.float16), id="float16"),
        pytest.param(lambda: torch.randn(17, 30, device=common.DEVICE, dtype=torch.float64).t(), id="transposed"),
        pytest.param(lambda: torch.randn(0, 7, device=common.DEVICE), id="empty"),
    ],
)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck(x, requires_grad):
    torch.library.opcheck(torch.ops.triton_lessons.blocked_sum.default, (x().requires_grad_(requires_grad),))


@pytest.mark.parametrize("m, n", [(33, 20), (1000, 17)])  # 1000 x 17 splits the rows
def test_torch_compile_fullgraph_forward_and_backward(m, n):
    torch._dynamo.reset()
    compiled = torch.compile(ex.blocked_sum, fullgraph=True)
    x = torch.randn(m, n, device=common.DEVICE)
    assert_sums(compiled(x), x, "compiled forward")
    leaf = x.clone().requires_grad_()
    y = compiled(leaf)
    assert_sums(y, x, "compiled forward with grad")
    grad_out = torch.randn(n, device=common.DEVICE)
    y.backward(grad_out)
    assert torch.equal(leaf.grad, grad_out.expand(m, n))


@support.gpu_only
@pytest.mark.parametrize("m, n", [(4096, 512), (1048576, 64)])  # one pass, and two
def test_capture_in_a_cuda_graph(m, n):
    x = torch.randn(m, n, device=common.DEVICE)
    result = {}
    graph = common.capture_graph(lambda: result.update(y=ex.blocked_sum(x)))
    x.copy_(torch.randn_like(x))  # replay reads x anew
    graph.replay()
    torch.cuda.synchronize()
    assert_sums(result["y"], x, "graph replay")


@support.gpu_only
@pytest.mark.parametrize("m, n", [(4096, 512), (1048576, 64)])
def test_call_on_a_side_stream(m, n):
    x = torch.randn(m, n, device=common.DEVICE)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        y = ex.blocked_sum(x)
    torch.cuda.current_stream().wait_stream(stream)
    assert_sums(y, x, "side stream")


# --- benchmark() and main() ----------------------------------------------------------------------


def test_benchmark_rows():
    rows = ex.benchmark(40, 24, "float32")
    assert [r["variant"] for r in rows] == ["torch", "blocked_sum", *VARIANT_NAMES]
    for row in rows:
        assert set(row) == set(common.RESULT_COLUMNS)
        assert row["case"] == "40x24 float32" and row["unit"] == "GB/s"
        assert row["eager ms"] > 0 and row["throughput"] > 0 and row["% of ceiling"] > 0 and row["x torch"] > 0
        assert (row["graph ms"] is None) == common.INTERPRETED
    assert {tuple(sorted(case)) for case in ex.SWEEP} == {("cols", "dtype", "rows")}


def test_benchmark_leaves_out_a_descriptor_that_cannot_take_x():
    assert "descriptor" not in [r["variant"] for r in ex.benchmark(40, 10, "float32")]  # 40-byte rows


def test_main_runs_and_explains_the_split(capsys):
    assert ex.main(["--rows", "300", "--cols", "20", "--dtype", "bfloat16"]) == 0
    printed = capsys.readouterr().out
    assert "splits=" in printed and "check passed" in printed and "x torch" in printed
    assert "blocked_sum runs the pointer kernels" in printed
    for name, reason in ex.UNAVAILABLE.items():
        assert f"variant {name!r} left out: {reason}" in printed


def test_main_says_why_the_descriptor_is_left_out(capsys):
    assert ex.main(["--rows", "20", "--cols", "10"]) == 0
    assert "variant 'descriptor' left out: it cannot take a 20x10 float32 x: stride 10" in capsys.readouterr().out


@pytest.mark.parametrize("flag", ["--rows", "--cols"])
def test_negative_sizes_are_a_usage_error(flag, capsys):
    with pytest.raises(SystemExit) as exit_info:
        ex.main([flag, "-3"])
    assert exit_info.value.code == 2
    assert "must be >= 0" in capsys.readouterr().err


def test_help_shows_every_default(capsys):
    with pytest.raises(SystemExit) as exit_info:
        ex.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.count("(default:") == 3 and "--dtype" in out


# --- GPU sizes -----------------------------------------------------------------------------------


@support.gpu_only
@pytest.mark.parametrize(
    "m, n, dtype",
    [
        (16384, 8192, torch.float32),
        (2048, 65536, torch.float32),
        (1048576, 64, torch.float32),
        (64, 1048576, torch.float32),
        (1048576, 64, torch.bfloat16),
        (16384, 8192, torch.bfloat16),
        (4099, 3001, torch.float16),
    ],
)
def test_benchmark_shapes_on_the_gpu(m, n, dtype):
    assert "blocked_sum" in ex.check(m, n, dtype)


@support.gpu_only
@pytest.mark.parametrize("layout", ["transposed", "sliced", "every_other_row"])
def test_large_strided_views_on_the_gpu(layout):
    assert "pointer" in ex.check(8192, 3000, torch.float32, layout=layout)


@support.gpu_only
@pytest.mark.parametrize(
    "m, n, dtype",
    [
        (65537, 32768, torch.float16),  # row 65536 starts at element 2^31
        (2**25 + 300, 64, torch.bfloat16),  # tall: the split path past 2^31 elements
    ],
)
def test_offsets_past_2_to_the_31_elements(m, n, dtype):
    x = torch.randn(m, n, dtype=dtype, device=common.DEVICE)
    assert x.numel() > 2**31
    # The float64 reference in chunks of rows: a float64 copy of all of x would take 16 GiB more.
    expected = torch.zeros(n, dtype=torch.float64, device=x.device)
    magnitude = torch.zeros_like(expected)
    for chunk in x.split(1 << 20 >> max(n.bit_length() - 11, 0)):
        expected += chunk.sum(dim=0, dtype=torch.float64)
        magnitude += chunk.abs().sum(dim=0, dtype=torch.float64)
    for name in ALL_NAMES:
        out = torch.full((n,), float("nan"), dtype=dtype, device=x.device)
        result = ex.blocked_sum(x, out=out) if name == "blocked_sum" else ex.VARIANTS[name](x, out=out, poison=True)
        common.assert_close(result, expected, magnitude, m, f"{name} {m}x{n} {dtype}")


def test_pruning_always_leaves_a_config():
    for n, rows in [(1, 1), (1, 1000), (1000, 1), (64, 2048), (10**6, 64)]:
        for max_side in (None, 256):
            kept = ex.prune_configs(ex.CONFIGS, {"N": n, "rows_per_split": rows}, max_side=max_side)
            assert kept and all(c in ex.CONFIGS for c in kept)
            assert max_side is None or all(max(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]) <= max_side for c in kept)
