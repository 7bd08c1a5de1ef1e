"""Tests for 03_blocked_sum: the lesson (main.py: every variant on every size, dtype and layout,
the row split and its second pass, the Function; any_x.py, Part 3: float64 and any size;
block_ptr.py's probe) and the op (op.py: out=, gradients, the registered op with opcheck and
torch.compile, bad input)."""

import functools

import pytest
import torch

import support
import triton  # after support, which may switch on the interpreter

bs = support.load("03_blocked_sum")
bp = support.load_beside("03_blocked_sum", "block_ptr.py")  # the appendix: adds "block_ptr"
ax = support.load_beside("03_blocked_sum", "any_x.py")  # Part 3: adds "any_x"
op = support.load_op("03_blocked_sum")
OP = torch.ops.triton_lessons.blocked_sum
common = support.common
DEVICE = common.DEVICE
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
VARIANTS = {**bp.VARIANTS, "any_x": ax.VARIANTS["any_x"]}  # every variant of the lesson's files
ENTRY_AND_VARIANTS = {"blocked_sum": op.blocked_sum, **VARIANTS}
STYLES = [s for s in op.STYLES if s != "one_d"]  # one_d sums in float32: the comparison
FIRST_KERNELS = ("simple", "one_d")  # a program per 64 columns
# float32 sums and int32 offsets: the lesson keeps them simple; any_x.py (Part 3) lifts both
FLOAT32_VARIANTS = ("simple", "split", "split_ahead", "tuned", "one_d", "block_ptr")


def variants_for(dtype):
    """The lesson's variants that take dtype: all but any_x sum in float32 only."""
    return {
        k: v for k, v in VARIANTS.items() if k not in FLOAT32_VARIANTS or dtype != torch.float64
    }


def layout(m, n, dtype=torch.float32, how="contiguous"):
    """A random (m, n) x: contiguous, transposed (column stride m), sliced (columns 1 to n of a
    wider x: rows not 16-byte aligned) or every other row of a taller x."""
    kw = {"dtype": dtype, "device": DEVICE}
    if how == "transposed":
        return torch.randn(n, m, **kw).t()
    if how == "sliced":
        return torch.randn(m, n + 3, **kw)[:, 1 : n + 1]
    if how == "every_other_row":
        return torch.randn(2 * m, n, **kw)[::2]
    return torch.randn(m, n, **kw)


def assert_sums(result, x, what):
    x64 = x.detach().double()
    common.assert_close(result, x64.sum(0), x64.abs().sum(0), x.shape[0], what)


@pytest.mark.parametrize(
    "m, n",
    [(1, 1), (1, 17), (17, 1), (17, 17), (1000, 17), (17, 1000), (1001, 33), (100, 1001), (64, 64)],
)
def test_sizes(m, n):
    assert bs.check_variants(layout(m, n), VARIANTS) == list(VARIANTS)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("how", ["contiguous", "transposed", "sliced", "every_other_row"])
def test_dtypes_and_layouts(dtype, how):
    variants = variants_for(dtype)
    assert bs.check_variants(layout(300, 40, dtype, how), variants) == list(variants)
    result = op.blocked_sum(x := layout(300, 40, dtype, how))
    assert_sums(result, x, f"entry {dtype} {how}")


def test_one_d_is_the_same_sum_with_a_1d_accumulator():
    x = layout(1000, 96)
    assert bs.check_variants(x, {"one_d": bp.VARIANTS["one_d"]}) == ["one_d"]
    assert bs.one_d_column_sum_kernel.fn is not bs.simple_column_sum_kernel.fn


@support.gpu_only
@pytest.mark.parametrize("index", range(support.most_configs(bs)))
def test_every_config_on_gpu(index):
    # The other tests tune between two configs per kernel (support.load): here each kernel runs
    # its config `index`, on a matrix whose rows are split (two passes).
    with support.pinned_config(bs, index), support.pinned_config(ax, index):
        assert bs.chunks(5000)[0] > 1 and ax.plan_splits(5000, 1100, DEVICE)[0] > 1
        assert bs.check_variants(layout(5000, 1100), VARIANTS) == list(VARIANTS)


@pytest.mark.parametrize("name", list(ENTRY_AND_VARIANTS))
def test_half_precision_accumulates_in_float32(name):
    # 2048 copies of 1 + 2^-10: the exact sum 2050 is a float16 number and float32 adds them
    # exactly, but a float16 running sum drops the 2^-10 once it passes 2.
    x = torch.full((2048, 8), 1 + 2.0**-10, dtype=torch.float16, device=DEVICE)
    expected = torch.full((8,), 2050.0, dtype=torch.float16, device=DEVICE)
    assert torch.equal(ENTRY_AND_VARIANTS[name](x), expected)


@pytest.mark.parametrize("name", [n for n in ENTRY_AND_VARIANTS if n not in FLOAT32_VARIANTS])
def test_float64_accumulates_in_float64(name):
    x = torch.tensor([[1.0], [1e-10], [-1.0]], dtype=torch.float64, device=DEVICE).expand(3, 4)
    got = ENTRY_AND_VARIANTS[name](x.contiguous())
    assert got.dtype == torch.float64 and got[0].item() == pytest.approx(1e-10, rel=1e-6)


@pytest.mark.parametrize("dtype", FLOATS)
def test_output_keeps_the_input_dtype_and_shape(dtype):
    result = op.blocked_sum(layout(50, 9, dtype))
    assert result.dtype == dtype and result.shape == (9,)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("m, n", [(0, 5), (0, 1), (5, 0), (0, 0)])
def test_empty_inputs(style, m, n):
    x = torch.randn(m, n, device=DEVICE)
    out = torch.full((n,), float("nan"), device=DEVICE)
    assert op.blocked_sum(x, out=out, style=style) is out
    assert torch.equal(out, torch.zeros(n, device=DEVICE))  # the sum of no rows is 0
    assert torch.equal(op.blocked_sum(x, style=style), torch.zeros(n, device=DEVICE))


@pytest.mark.parametrize("name", list(VARIANTS))
def test_lesson_variants_with_no_rows(name):
    with common.uninitialized_memory_is_nan():
        got = VARIANTS[name](torch.randn(0, 5, device=DEVICE))
    assert torch.equal(got, torch.zeros(5, device=DEVICE))


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("m, n, which", [(12, 12, "row"), (12, 12, "column"), (1000, 16, "row")])
def test_out_that_aliases_x_gets_the_right_answer(style, m, n, which):
    # torch.sum(x, 0, out=x[0]) is right too: the sums go to a fresh buffer first, then into out.
    x = torch.randn(m, n, device=DEVICE)
    expected = x.clone()
    out = x[3] if which == "row" else x[:, 5]  # a contiguous row, or a strided column, of x
    assert op.blocked_sum(x, out=out, style=style) is out
    assert_sums(out, expected, f"{style} out=x {which}")


@pytest.mark.parametrize("style", STYLES)
def test_strided_out_gets_the_right_answer(style):
    x = torch.randn(300, 12, device=DEVICE)
    buffer = torch.full((24,), float("nan"), device=DEVICE)
    out = buffer[::2]
    assert op.blocked_sum(x, out=out, style=style) is out
    assert_sums(out, x, f"{style} out with stride 2")
    assert buffer[1::2].isnan().all()  # the elements between are untouched


def test_out_version_is_bumped_as_by_pytorch():
    # The reproducer: a backward that saved out must not run on the new values.
    x = torch.randn(6, 3, device=DEVICE)
    out = torch.zeros(3, device=DEVICE)
    w = torch.ones(3, device=DEVICE, requires_grad=True)
    z = (w * out).sum()
    version = out._version
    assert op.blocked_sum(x, out=out) is out and out._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_out_that_requires_grad_is_refused():
    out = torch.zeros(3, device=DEVICE, requires_grad=True)
    with pytest.raises(ValueError, match="out requires grad"):
        op.blocked_sum(torch.randn(4, 3, device=DEVICE), out=out)
    with torch.no_grad():
        assert_sums(op.blocked_sum(x := torch.randn(4, 3, device=DEVICE), out=out), x, "no_grad")


def test_out_is_refused_when_x_requires_grad():
    x = torch.randn(30, 12, device=DEVICE, requires_grad=True)
    with pytest.raises(ValueError, match="not differentiable"):
        op.blocked_sum(x, out=torch.empty(12, device=DEVICE))


@pytest.mark.parametrize("style", STYLES)
def test_out_problems(style):
    x = torch.ones(3, 4, device=DEVICE)

    def fn(x, out):
        return op.blocked_sum(x, out=out, style=style)

    with pytest.raises(ValueError, match=r"out .*\(5,\).*expected \(4,\)"):
        fn(x, out=torch.empty(5, device=DEVICE))
    with pytest.raises(ValueError, match=r"out .*torch.float64.*expected .*torch.float32"):
        fn(x, out=torch.empty(4, dtype=torch.float64, device=DEVICE))
    with pytest.raises(TypeError, match="out must be a torch.Tensor, got list"):
        fn(x, out=[0.0] * 4)
    with pytest.raises(ValueError, match=r"strides \(0,\).*share one memory location"):
        fn(x, out=torch.empty(1, device=DEVICE).expand(4))


# --- The row split and its second pass -----------------------------------------------------


@pytest.mark.parametrize("m, n", [(2100, 20), (4097, 3), (2049, 33)])
def test_split_shapes_split(m, n):
    # Split by main.py's chunks (2048 rows on a GPU, 256 on a CPU) and by any_x.py's plan.
    assert bs.chunks(m)[0] > 1 and ax.plan_splits(m, n, DEVICE)[0] > 1
    assert bs.check_variants(layout(m, n), VARIANTS) == list(VARIANTS)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_split_path_is_deterministic(name):
    x = torch.randn(2100, 20, device=DEVICE)
    assert bs.chunks(2100)[0] > 1 and ax.plan_splits(2100, 20, DEVICE)[0] > 1
    assert torch.equal(VARIANTS[name](x), VARIANTS[name](x))


@pytest.mark.parametrize("splits, n", [(1, 1), (2, 17), (5, 64), (300, 20), (1001, 3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_sum_partials_alone(splits, n, dtype):
    # The second pass on buffers shorter and taller than one step of it (256 rows).
    # main.py's kernel sums in float32; any_x.py's, which a float64 x runs, in float64.
    second_pass = ax.sum_partials if dtype == torch.float64 else bs.sum_partials  # Part 1's kernel
    acc_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    partial = torch.randn(splits, n, dtype=acc_dtype, device=DEVICE)
    out = torch.full((n,), float("nan"), dtype=dtype, device=DEVICE)
    second_pass(partial, out)
    p64 = partial.double()
    common.assert_close(out, p64.sum(0), p64.abs().sum(0), splits, f"sum_partials {splits}x{n}")
    again = torch.empty_like(out)
    second_pass(partial, again)
    assert torch.equal(out, again)


@pytest.mark.parametrize(
    "m, n",
    [(1, 1), (0, 3), (31, 5), (1000, 17), (1048576, 64), (16384, 8192), (64, 1048576), (10**6, 1)],
)
@pytest.mark.parametrize("plan", ["chunks", "plan_splits"])
def test_chunks_and_plan_splits_cover_every_row(m, n, plan):
    # main.py's fixed chunks, and any_x.py's plan (which op.py runs)
    if plan == "chunks":
        (splits, rows_per_chunk), align = bs.chunks(m), bs.CHUNK_ROWS
    else:
        (splits, rows_per_chunk), align = ax.plan_splits(m, n, DEVICE), ax.ROW_ALIGN
    if splits == 1:
        assert rows_per_chunk >= m and rows_per_chunk & (rows_per_chunk - 1) == 0  # power of 2
    else:
        assert rows_per_chunk % align == 0  # no tile crosses two chunks
        assert (splits - 1) * rows_per_chunk < m <= splits * rows_per_chunk  # no empty chunk
        assert splits <= 65535  # the grid's limit along axis 1


def test_plan_splits_splits_tall_inputs_but_not_wide_ones():
    assert ax.plan_splits(1048576, 64, DEVICE)[0] > 1
    assert ax.plan_splits(64, 1048576, DEVICE)[0] == 1


def test_the_lesson_refuses_more_chunks_than_a_grid_axis_holds():
    # 2^27 + 1 rows of one column: over 65535 chunks of 2048 (of 256 on a CPU). A fake tensor:
    # the wrapper refuses before any memory or launch.
    with torch._subclasses.fake_tensor.FakeTensorMode():
        x = torch.empty(2**27 + 1, 1, device=DEVICE)
        with pytest.raises(AssertionError, match="too many chunks: see any_x.py"):
            bs.column_sums(x)


def test_op_pruning_always_leaves_a_fitting_config():
    for n, rows in [(1, 1), (1, 1000), (1000, 1), (64, 2048), (10**6, 64)]:
        kept = op.prune_configs(bs.CONFIGS, {"N": n, "rows_per_chunk": rows})
        assert kept and all(c in bs.CONFIGS for c in kept)


def test_chunks_are_a_multiple_of_every_tile_height():
    heights = [
        c.kwargs["BLOCK_M"] for c in support.ALL_CONFIGS.get(bs.column_sum_kernel, bs.CONFIGS)
    ]
    for align in (bs.CHUNK_ROWS, ax.ROW_ALIGN):
        assert all(align % m == 0 for m in heights)


# --- Styles that refuse -----------------------------------------------------------------------


@pytest.mark.skipif(bp.BLOCK_PTR_PROBLEM is None, reason="block pointers run here")
@pytest.mark.parametrize("fn", [op.blocked_sum, OP], ids=["entry", "op"])
def test_block_ptr_style_refuses_where_block_pointers_are_gone(fn):
    with pytest.raises(ValueError, match="style 'block_ptr': tl.make_block_ptr does not run"):
        fn(torch.randn(4, 4, device=DEVICE), style="block_ptr")


def test_block_ptr_probe_leaves_the_random_state_alone():  # it runs when the lesson is imported
    states = [torch.get_rng_state()] + ([torch.cuda.get_rng_state()] if support.ON_GPU else [])
    bp.block_ptr_problem()
    after = [torch.get_rng_state()] + ([torch.cuda.get_rng_state()] if support.ON_GPU else [])
    assert all(torch.equal(a, b) for a, b in zip(states, after))


def test_block_ptr_probe_reports_a_failure_and_wrong_sums(monkeypatch):
    def fails(x):
        raise RuntimeError("no block pointers\nmore detail")

    monkeypatch.setattr(bp, "column_sums_block_ptr", fails)
    version = triton.__version__
    assert bp.block_ptr_problem().endswith(f"run on triton {version}: no block pointers")
    monkeypatch.setattr(bp, "column_sums_block_ptr", lambda x: torch.ones_like(x[0]))
    assert "elements off" in bp.block_ptr_problem()


@pytest.mark.parametrize("how", ["contiguous", "transposed", "sliced", "every_other_row"])
def test_entry_runs_the_tuned_kernels(how):
    # The op tunes its own copy of any_x.py's kernel: at one config, the same bits as any_x's
    # (main.py's tuned variant cuts x into other chunks on a GPU: other bits).
    x = layout(1000, 16, how=how)
    with support.pinned_config(bs, 0), support.pinned_config(ax, 0), support.pinned_config(op, 0):
        assert torch.equal(op.blocked_sum(x), VARIANTS["any_x"](x))


@pytest.mark.parametrize("style", ["simple", "tuned"])
def test_a_plan_sums_each_new_x_of_its_layout(monkeypatch, style):
    # forward() plans each layout once (the kernel, the split, the grid) and runs the plan for
    # the next x of that layout, with its own values; the same shape at an address 4 bytes off
    # 16 is another layout, and so is another style. Outputs start as NaN: each is written.
    planned, real = [], op.plan
    monkeypatch.setattr(op, "PLANS", {})
    monkeypatch.setattr(op, "plan", lambda *a, **k: planned.append(a[1]) or real(*a, **k))
    buffer = torch.empty(2100 * 24 + 1, device=DEVICE)
    for start in (0, 0, 1, 1, 0):
        x = buffer[start : start + 2100 * 24].normal_().view(2100, 24)  # split in chunks
        with common.uninitialized_memory_is_nan():
            assert_sums(op.blocked_sum(x, style=style), x, f"{style}, x at {start}")
    assert planned == [style, style] and len(op.PLANS) == 2


def test_blocked_sum_validates_once_a_layout(monkeypatch):
    # forward()'s plan checks x once: later calls with new x of the same layout skip validate();
    # another layout (strides, an empty x) or style checks again, and so does a bad x, which
    # leaves no plan.
    checked, real = [], op.validate
    monkeypatch.setattr(op, "validate", lambda *args: checked.append(args) or real(*args))
    monkeypatch.setattr(op, "PLANS", {})
    for _ in range(3):
        x = layout(40, 24)
        with common.uninitialized_memory_is_nan():
            assert_sums(op.blocked_sum(x), x, "tuned")
    assert len(checked) == 1
    op.blocked_sum(layout(40, 24).T.contiguous().T)
    op.blocked_sum(layout(40, 24), style="simple")
    empty = torch.empty(0, 3, device=DEVICE)
    assert_sums(op.blocked_sum(empty), empty, "empty")
    assert len(checked) == 4
    for _ in range(2):
        with pytest.raises(TypeError, match="x is torch.int32"):
            op.blocked_sum(torch.ones(3, 4, dtype=torch.int32, device=DEVICE))
    assert len(checked) == 6 and len(op.PLANS) == 4


def test_a_plans_two_launches_have_two_kinds(monkeypatch):
    # On a GPU a plan's launches are keyed by the kind it names (common/launch.py's Named): its
    # second pass launches other arguments, so it names another kind, whichever kernel it is.
    kinds = []
    monkeypatch.setattr(op, "PLANS", {})
    monkeypatch.setattr(
        common, "traceable", lambda kernel, in_op, kind=None: kinds.append(kind) or kernel
    )
    x = layout(2100, 24)  # split in chunks: two launches
    assert_sums(op.blocked_sum(x), x, "tuned")
    (key,) = op.PLANS
    assert kinds == [key, (key, "second pass")]


def test_check_catches_an_output_element_left_unwritten(monkeypatch):
    def forgets_the_last_column(x):
        out = torch.empty(x.shape[1], device=x.device)  # NaN inside check
        out[:-1] = x[:, :-1].sum(0)
        return out

    with pytest.raises(AssertionError, match=r"simple on x \(9, 8\).*1 of 8 elements off.*got nan"):
        bs.check_variants(layout(9, 8), {"simple": forgets_the_last_column})


# --- Bad input: the same error through the entry and the op ---------------------------------

BAD_INPUT = {  # case: (arguments, error, message)
    # Expanded: a dimension of 2^30 with no memory behind it. On an H200, 2^31 + 256 columns
    # ended in an illegal memory access, 2^31 - 1 rows in a wrong sum.
    "2^30 columns": (
        lambda: (torch.zeros(1, 1, device=DEVICE).expand(2, 2**30),),
        ValueError,
        r"x has shape \(2, 1073741824\): the kernels number rows and columns in int32",
    ),
    "2^30 rows": (
        lambda: (torch.zeros(1, 1, device=DEVICE).expand(2**30, 3), "tuned"),
        ValueError,
        r"x has shape \(1073741824, 3\): the kernels number rows and columns in int32",
    ),
    "int32": (lambda: (torch.ones(3, 4, dtype=torch.int32),), TypeError, "x is torch.int32"),
    "bool": (lambda: (torch.ones(3, 4, dtype=torch.bool),), TypeError, "x is torch.bool"),
    "0-d": (lambda: (torch.tensor(1.0),), ValueError, r"x has shape \(\): expected a 2-D"),
    "1-D": (lambda: (torch.ones(3),), ValueError, r"x has shape \(3,\): expected a 2-D"),
    "3-D": (lambda: (torch.ones(2, 3, 4),), ValueError, r"shape \(2, 3, 4\): expected a 2-D"),
    "style": (lambda: (torch.ones(2, 3), "nope"), ValueError, "style 'nope': not one of"),
    # the lesson's steps of "tuned" at a fixed tile are variants, not styles
    "split": (lambda: (torch.ones(2, 3), "split"), ValueError, "style 'split': not one of"),
    "one_d in float64": (
        lambda: (torch.ones(2, 3, dtype=torch.float64), "one_d"),
        TypeError,
        "style 'one_d' sums in float32 only",
    ),
    "simple in float64": (
        lambda: (torch.ones(2, 3, dtype=torch.float64), "simple"),
        TypeError,
        "style 'simple' sums in float32 only",
    ),
}


@pytest.mark.parametrize("style", [s for s in op.FLOAT32_STYLES if s in bp.VARIANTS])
def test_first_kernels_refuse_offsets_past_2_to_the_31(style):
    # Fake tensors: the strides of an x of over 2^31 elements, with no memory behind them.
    with torch._subclasses.fake_tensor.FakeTensorMode():
        x = torch.empty_strided((2, 3), (2**31, 1), device=DEVICE)
        with pytest.raises(ValueError, match=rf"style '{style}' keeps offsets in int32"):
            op.validate(x, style)
        assert op.validate(x, "tuned") == 3


@pytest.mark.parametrize("style", [s for s in op.FLOAT32_STYLES if s in bp.VARIANTS])
def test_float32_styles_refuse_float64_through_the_entry_and_the_op(style):
    x = torch.ones(2, 3, dtype=torch.float64, device=DEVICE)
    for fn in (lambda: op.blocked_sum(x, style=style), lambda: OP(x, style)):
        with pytest.raises(TypeError, match=f"style '{style}' sums in float32 only"):
            fn()


@pytest.mark.parametrize("name", ["split", "split_ahead", "tuned"])
def test_the_lessons_split_wrappers_send_float64_to_any_x(name):
    with pytest.raises(AssertionError, match="float32 sums: see any_x.py"):
        bs.VARIANTS[name](torch.ones(300, 3, dtype=torch.float64, device=DEVICE))


@pytest.mark.parametrize("case", list(BAD_INPUT))
@pytest.mark.parametrize("entry", ["blocked_sum", "torch.ops.triton_lessons.blocked_sum"])
def test_bad_input_gives_the_same_error_through_the_entry_and_the_op(case, entry):
    make, error, message = BAD_INPUT[case]
    args = tuple(t.to(DEVICE) if isinstance(t, torch.Tensor) else t for t in make())
    if entry == "blocked_sum":
        fn = op.blocked_sum if len(args) == 1 else lambda x, s: op.blocked_sum(x, style=s)
    else:
        fn = OP
    with pytest.raises(error, match=message):
        fn(*args)


def test_a_dimension_just_under_2_to_the_30_is_taken():
    x = torch.zeros(1, 1, device=DEVICE)
    assert op.validate(x.expand(2**30 - 1, 2)) == 2 and op.validate(x.expand(2, 2**30 - 1)) > 0


def test_a_style_that_is_no_string_is_named():
    # (the registered op's schema refuses it first, with PyTorch's RuntimeError)
    with pytest.raises(ValueError, match=r"style \['tuned'\]: not one of"):
        op.blocked_sum(torch.ones(2, 3, device=DEVICE), ["tuned"])


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_fake_validates_like_the_entry(case):
    # torch.compile runs the op's fake function on fake tensors: it must refuse the same input.
    make, error, message = BAD_INPUT[case]
    with torch._subclasses.fake_tensor.FakeTensorMode(allow_non_fake_inputs=True):
        args = tuple(t.to(DEVICE) if isinstance(t, torch.Tensor) else t for t in make())
        with pytest.raises(error, match=message):
            OP(*args)


def test_a_negated_view_is_refused_by_the_entry_and_resolved_by_the_op():
    # The imaginary part of a conjugate holds its memory's values with the signs flipped
    # (is_neg()): a kernel would read the memory. The entry names it, in x and in out; the
    # registered op gets it resolved by PyTorch's dispatcher, and is right.
    x = torch.randn(40, 3, dtype=torch.cfloat, device=DEVICE).conj().imag
    for _ in range(2):  # a layout refused keeps no plan
        with pytest.raises(ValueError, match=r"x is a negated view \(is_neg\(\)\)"):
            op.blocked_sum(x)
    with pytest.raises(ValueError, match="out is a negated view"):
        op.blocked_sum(
            x.resolve_neg(), out=torch.randn(3, dtype=torch.cfloat, device=DEVICE).conj().imag
        )
    assert_sums(OP(x), x.resolve_neg(), "the op")


def test_not_a_tensor():
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        op.blocked_sum([[1.0, 2.0]])
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor'"):
        OP([[1.0, 2.0]])


@pytest.mark.parametrize("fn", [op.blocked_sum, OP], ids=["entry", "op"])
def test_wrong_device(fn):
    with pytest.raises(ValueError, match="x is on meta: it must be on"):
        fn(torch.ones(3, 4, device="meta"))


# --- Gradients and the registered op ----------------------------------------------------------


@pytest.mark.parametrize("style", [s for s in STYLES if s not in op.FLOAT32_STYLES])
@pytest.mark.parametrize("m, n", [(5, 4), (65, 4)])  # 65 x 4 splits the rows on the CPU
def test_gradcheck_and_gradgradcheck_float64(style, m, n):
    x = torch.randn(m, n, dtype=torch.float64, device=DEVICE, requires_grad=True)

    def entry(t):
        return op.blocked_sum(t, style=style)

    assert torch.autograd.gradcheck(entry, (x,))
    assert torch.autograd.gradgradcheck(entry, (x,))


def test_gradcheck_the_registered_op_and_both_functions():
    x = torch.randn(65, 3, dtype=torch.float64, device=DEVICE, requires_grad=True)
    assert torch.autograd.gradcheck(OP, (x,))
    assert torch.autograd.gradgradcheck(OP, (x,))
    assert torch.autograd.gradcheck(lambda t: op.BlockedSum.apply(t, "tuned"), (x,))
    # The lesson's Function sums in float32 (any_x.py takes float64): a float32 check, its steps
    # wide enough that float32 rounding stays far below the tolerance.
    x32, loose = x.detach().float().requires_grad_(), dict(eps=1e-2, atol=1e-3, rtol=1e-3)
    assert torch.autograd.gradcheck(bs.BlockedSum.apply, (x32,), **loose)
    assert torch.autograd.gradgradcheck(bs.BlockedSum.apply, (x32,), **loose)  # expand is recorded


def test_lesson_function_launches_column_sums(monkeypatch):
    calls = []
    original = bs.column_sums
    monkeypatch.setattr(bs, "column_sums", lambda x: calls.append(x) or original(x))
    x = torch.randn(30, 5, device=DEVICE, requires_grad=True)
    bs.BlockedSum.apply(x).sum().backward()
    assert len(calls) == 1 and torch.equal(x.grad, torch.ones_like(x))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("how", ["contiguous", "transposed"])
def test_gradient_of_inputs_that_require_grad(dtype, how):
    x = layout(1000, 24, dtype, how).requires_grad_()
    y = op.blocked_sum(x)
    assert y.requires_grad and y.dtype == dtype
    assert_sums(y, x, f"forward with requires_grad {dtype}")
    grad_out = torch.randn(24, dtype=dtype, device=DEVICE)
    (grad_x,) = torch.autograd.grad(y, x, grad_out)
    assert grad_x.dtype == dtype and torch.equal(grad_x, grad_out.expand(1000, 24))


def test_second_derivative_through_a_larger_graph():
    x = torch.randn(40, 6, dtype=torch.float64, device=DEVICE, requires_grad=True)
    (grad,) = torch.autograd.grad((op.blocked_sum(x * 2) ** 2).sum(), x, create_graph=True)
    (hvp,) = torch.autograd.grad(grad.sum(), x)
    x_ref = x.detach().clone().requires_grad_()
    (grad_ref,) = torch.autograd.grad(((x_ref * 2).sum(0) ** 2).sum(), x_ref, create_graph=True)
    (hvp_ref,) = torch.autograd.grad(grad_ref.sum(), x_ref)
    torch.testing.assert_close((grad, hvp), (grad_ref, hvp_ref))


def test_eager_gradients_skip_the_dispatcher():
    x = torch.randn(8, 16, device=DEVICE, requires_grad=True)
    assert support.dispatched_ops(lambda: op.blocked_sum(x).sum().backward()) == []
    assert support.dispatched_ops(lambda: OP(x).sum().backward()) == ["triton_lessons::blocked_sum"]


def test_entry_without_gradients_records_no_graph():
    x = torch.randn(8, 16, device=DEVICE, requires_grad=True)
    assert op.blocked_sum(x.detach()).grad_fn is None
    assert op.blocked_sum(x).grad_fn is not None
    with torch.no_grad():
        assert op.blocked_sum(x).grad_fn is None


OPCHECK_INPUTS = {
    "float32": lambda: torch.randn(40, 24, device=DEVICE),
    "bfloat16-split": lambda: torch.randn(300, 8, device=DEVICE, dtype=torch.bfloat16),
    "float16": lambda: torch.randn(30, 20, device=DEVICE, dtype=torch.float16),
    "transposed": lambda: torch.randn(17, 30, device=DEVICE, dtype=torch.float64).t(),
    "empty": lambda: torch.randn(0, 7, device=DEVICE),
}


@pytest.mark.parametrize("case", list(OPCHECK_INPUTS))
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck(case, requires_grad):
    x = OPCHECK_INPUTS[case]().requires_grad_(requires_grad)
    torch.library.opcheck(torch.ops.triton_lessons.blocked_sum.default, (x, "tuned"))


@pytest.mark.parametrize("m, n", [(33, 20), (1000, 17)])  # 1000 x 17 splits the rows
def test_torch_compile_fullgraph_forward_and_backward(m, n):
    torch._dynamo.reset()
    compiled = torch.compile(op.blocked_sum, fullgraph=True)
    x = torch.randn(m, n, device=DEVICE)
    assert_sums(compiled(x), x, "compiled forward")
    leaf = x.clone().requires_grad_()
    y = compiled(leaf)
    assert_sums(y, x, "compiled forward with grad")
    grad_out = torch.randn(n, device=DEVICE)
    y.backward(grad_out)
    assert torch.equal(leaf.grad, grad_out.expand(m, n))


# --- benchmark() and main() --------------------------------------------------------------------


def test_benchmark_rows():
    rows = bp.benchmark(40, 24, "float32")
    names = ["torch", *bp.VARIANTS, "column_sum_kernel[grid] bare"]
    assert [r["variant"] for r in rows] == names
    for row in rows:
        assert set(row) == set(common.TIMING_COLUMNS)
        assert row["case"] == "40x24 float32" and row["unit"] == "GB/s"
        assert row["GPU ms"] > 0 and row["throughput"] > 0
        # a share of the GPU's copy speed; none under the interpreter, whose copy is the CPU's
        assert (row["% of ceiling"] is None) == common.INTERPRETED
        assert common.INTERPRETED or row["% of ceiling"] > 0
    assert {tuple(sorted(case)) for case in bs.SWEEP} == {("cols", "dtype", "rows")}


@pytest.mark.parametrize("lesson", [bs, bp, ax], ids=["main.py", "block_ptr.py", "any_x.py"])
def test_main_runs(capsys, lesson):
    assert lesson.main(["--rows", "300", "--cols", "20", "--dtype", "bfloat16"]) == 0
    out = capsys.readouterr().out
    sums = "[60.0, 65.0, 70.0, 75.0, 80.0, 85.0]"  # the docstring's x: column j sums to 60 + 5j
    assert f"the docstring's example: {sums} = {sums}" in out
    assert f"check passed: {', '.join(lesson.VARIANTS)} and the gradient match" in out
    assert "column_sum_kernel[grid] bare" in out
    for name, reason in getattr(lesson, "UNAVAILABLE", {}).items():
        assert f"variant {name!r} left out: {reason}" in out


def test_block_ptr_py_adds_its_variant_where_it_runs():
    lesson = ["simple", "split", "split_ahead", "tuned", "one_d"]
    assert list(bs.VARIANTS) == lesson
    assert list(bp.VARIANTS) == lesson + ([] if bp.BLOCK_PTR_PROBLEM else ["block_ptr"])
    assert list(ax.VARIANTS) == [*lesson, "any_x"]
    assert op.STYLES == ["simple", "one_d", "tuned"] + (
        [] if bp.BLOCK_PTR_PROBLEM else ["block_ptr"]
    )


@pytest.mark.parametrize("flag", ["--rows", "--cols"])
def test_negative_sizes_are_a_usage_error(flag, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bs.main([flag, "-3"])
    assert exit_info.value.code == 2 and "must be >= 0" in capsys.readouterr().err


def test_help_shows_every_default(capsys):
    with pytest.raises(SystemExit) as exit_info:
        bs.main(["--help"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.count("(default:") == 3


# --- GPU sizes ---------------------------------------------------------------------------------


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
    assert "tuned" in bs.check_variants(layout(m, n, dtype), VARIANTS)


@support.gpu_only
@pytest.mark.parametrize("how", ["transposed", "sliced", "every_other_row"])
def test_large_strided_views_on_the_gpu(how):
    assert "tuned" in bs.check_variants(layout(8192, 3000, how=how), VARIANTS)


@support.gpu_only
@pytest.mark.parametrize("m, n", [(4096, 512), (1048576, 64)])  # one pass, and two
def test_capture_in_a_cuda_graph(m, n):
    x = torch.randn(m, n, device=DEVICE)
    result = {}
    graph = common.capture_graph(lambda: result.update(y=op.blocked_sum(x)))
    x.copy_(torch.randn_like(x))  # replay reads x anew
    graph.replay()
    torch.cuda.synchronize()
    assert_sums(result["y"], x, "graph replay")


@support.gpu_only
@pytest.mark.parametrize(
    "m, n, dtype",
    [
        (65537, 32768, torch.float16),  # row 65536 starts at element 2^31
        (2**25 + 300, 64, torch.bfloat16),  # tall: the split path past 2^31 elements
    ],
)
def test_offsets_past_2_to_the_31_elements(m, n, dtype):
    x = torch.randn(m, n, dtype=dtype, device=DEVICE)
    assert x.numel() > 2**31
    # The float64 reference in chunks of rows: a float64 copy of all of x would take 16 GiB more.
    expected = torch.zeros(n, dtype=torch.float64, device=DEVICE)
    magnitude = torch.zeros_like(expected)
    for chunk in x.split(1 << 20 >> max(n.bit_length() - 11, 0)):
        expected += chunk.sum(dim=0, dtype=torch.float64)
        magnitude += chunk.abs().sum(dim=0, dtype=torch.float64)
    # The lesson's own kernels keep int32 offsets (their wrappers refuse such an x): any_x.py's
    # kernel, and the op's styles that run it.
    styles = {"tuned": functools.partial(op.blocked_sum, style="tuned")}
    for name, fn in {"any_x": ax.VARIANTS["any_x"], **styles}.items():
        with common.uninitialized_memory_is_nan():
            got = fn(x)
        common.assert_close(got, expected, magnitude, m, f"{name} {m}x{n} {dtype}")
