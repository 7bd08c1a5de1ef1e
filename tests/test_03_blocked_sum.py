import pytest
import torch

import support
from support import common

ex = support.load("03_blocked_sum")

VARIANT_NAMES = list(ex.VARIANTS)
ALL_NAMES = ["blocked_sum", *VARIANT_NAMES]


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
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_dtypes(name, dtype):
    assert ex.check(300, 40, dtype, variants=[name]) == [name]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_output_keeps_the_input_dtype_and_shape(dtype):
    x = torch.randn(50, 9, device=common.DEVICE).to(dtype)
    result = ex.blocked_sum(x)
    assert result.dtype == dtype and result.shape == (9,)


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("layout", ["transposed", "sliced", "every_other_row"])
def test_strided_views(name, layout):
    # The pointer and block_ptr variants honour any strides; the descriptor is skipped by check()
    # where the view breaks its alignment rules (tested below), and blocked_sum falls back.
    checked = ex.check(300, 40, torch.float32, layout=layout, variants=[name])
    if name != "descriptor":
        assert checked == [name]


def test_every_other_row_is_descriptor_aligned():
    # Row stride 2 * 40 floats = 320 bytes: a multiple of 16, so a descriptor can read this view.
    assert ex.check(300, 40, torch.float32, layout="every_other_row", variants=["descriptor"]) == ["descriptor"]


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_half_precision_accumulates_in_float32(name):
    # 2048 copies of 1 + 2^-10: the exact sum 2050 is a float16 number and float32 adds them
    # exactly, but a float16 running sum drops the 2^-10 once it passes 2.
    x = torch.full((2048, 8), 1 + 2.0**-10, dtype=torch.float16, device=common.DEVICE)
    assert torch.equal(ex.VARIANTS[name](x), torch.full((8,), 2050.0, dtype=torch.float16, device=common.DEVICE))


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("m, n", [(0, 5), (0, 1), (5, 0), (0, 0)])
def test_empty_inputs(name, m, n):
    x = torch.randn(m, n, device=common.DEVICE)
    fn = ex.blocked_sum if name == "blocked_sum" else ex.VARIANTS[name]
    out = torch.full((n,), float("nan"), device=common.DEVICE)
    result = fn(x, out=out)
    assert result is out
    assert torch.equal(result, torch.zeros(n, device=common.DEVICE))  # the sum of no rows is 0; no columns give []


def test_out_is_written_and_returned():
    x = torch.randn(70, 12, device=common.DEVICE)
    out = torch.full((12,), float("nan"), device=common.DEVICE)
    assert ex.blocked_sum(x, out=out) is out
    common.assert_close(out, x.double().sum(0), x.double().abs().sum(0), 70, "out=")


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
    x = ex.make_input(40, 20, torch.float32, layout)
    assert ex.pick_variant(x)[0] == "pointer"
    with pytest.raises(ValueError, match="descriptor variant cannot take"):
        ex.blocked_sum_descriptor(x)


@pytest.mark.parametrize("n, dtype", [(10, torch.float32), (333, torch.float32), (1, torch.float64), (12, torch.float16)])
def test_descriptor_refuses_unaligned_row_strides(n, dtype):
    x = torch.randn(8, n, device=common.DEVICE).to(dtype)
    with pytest.raises(ValueError, match="not a multiple of 16"):
        ex.blocked_sum_descriptor(x)
    assert ex.pick_variant(x)[0] == "pointer"
    ex.check(8, n, dtype, layout="contiguous", variants=["blocked_sum"])


def test_descriptor_refuses_an_unaligned_base():
    x = torch.randn(8 * 16 + 1, device=common.DEVICE)[1:].view(8, 16)
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        ex.blocked_sum_descriptor(x)


def test_entry_picks_pointers_for_any_layout():
    for layout in ex.LAYOUTS:
        assert ex.pick_variant(ex.make_input(40, 16, torch.float32, layout))[0] == "pointer"


@pytest.mark.parametrize("name", ALL_NAMES)
def test_bad_inputs(name):
    fn = ex.blocked_sum if name == "blocked_sum" else ex.VARIANTS[name]
    with pytest.raises(TypeError, match="expects a torch.Tensor"):
        fn([[1.0, 2.0]])
    with pytest.raises(TypeError, match="torch.int32"):
        fn(torch.ones(3, 4, dtype=torch.int32, device=common.DEVICE))
    with pytest.raises(ValueError, match=r"2-D tensor, got shape \(3,\)"):
        fn(torch.ones(3, device=common.DEVICE))
    with pytest.raises(ValueError, match=r"2-D tensor, got shape \(2, 3, 4\)"):
        fn(torch.ones(2, 3, 4, device=common.DEVICE))
    with pytest.raises(ValueError, match="meta"):
        fn(torch.ones(3, 4, device="meta"))
    x = torch.ones(3, 4, device=common.DEVICE)
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        fn(x, out=torch.empty(5, device=common.DEVICE))
    with pytest.raises(ValueError, match="float64"):
        fn(x, out=torch.empty(4, dtype=torch.float64, device=common.DEVICE))


def test_check_rejects_an_unknown_layout():
    with pytest.raises(ValueError, match="unknown layout"):
        ex.check(4, 4, torch.float32, layout="diagonal")


def test_check_catches_a_wrong_answer():
    def off_by_one_row(x, out=None, poison=False):
        return ex.blocked_sum(x[1:], out=out, poison=poison)

    ex.VARIANTS["broken"] = off_by_one_row
    try:
        with pytest.raises(AssertionError, match="broken"):
            ex.check(50, 7, torch.float32, variants=["broken"])
    finally:
        del ex.VARIANTS["broken"]


def test_benchmark_rows():
    rows = ex.benchmark(40, 24, "float32")
    assert [r["variant"] for r in rows] == ["torch", *VARIANT_NAMES]
    for row in rows:
        assert row["case"] == "40x24 float32" and row["unit"] == "GB/s"
        assert row["ms"] > 0 and row["throughput"] > 0 and row["% of ceiling"] > 0 and row["x torch"] > 0
    assert {tuple(sorted(case)) for case in ex.SWEEP} == {("cols", "dtype", "rows")}


def test_main_runs_and_explains_the_split(capsys):
    assert ex.main(["--rows", "300", "--cols", "20", "--dtype", "bfloat16"]) == 0
    printed = capsys.readouterr().out
    assert "splits=" in printed and "check passed" in printed and "x torch" in printed


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
    expected = x.sum(dim=0, dtype=torch.float64)
    magnitude = x.abs().sum(dim=0, dtype=torch.float64)
    for name in ALL_NAMES:
        fn = ex.blocked_sum if name == "blocked_sum" else ex.VARIANTS[name]
        out = torch.full((n,), float("nan"), dtype=dtype, device=x.device)
        common.assert_close(fn(x, out=out, poison=True), expected, magnitude, m, f"{name} {m}x{n} {dtype}")


def test_pruning_always_leaves_a_config():
    for n, rows in [(1, 1), (1, 1000), (1000, 1), (64, 2048), (10**6, 64)]:
        for prune in (ex.prune_configs, ex.prune_descriptor_configs):
            kept = prune(ex.CONFIGS, {"N": n, "rows_per_split": rows})
            assert kept and all(c in ex.CONFIGS for c in kept)
