"""What every lesson promises (CONTRIBUTING.md), and the shared helpers in common/."""

import types

import pytest
import torch

import support
from support import common
import triton  # after support, whose import of common may switch on the interpreter
import triton.language as tl

EXAMPLES = [path.parent.name for path in common.example_paths()]
VARIANT_STYLES = {
    "01_matmul_elementwise": set(),
    "02_matmul_tiled": {"simple", "pointer", "persistent"},
    "03_blocked_sum": {"simple", "pointer", "block_ptr", "descriptor"},
    "04_weighted_sum": {"simple", "pointer"},
}


def test_all_four_lessons_exist():
    assert EXAMPLES == list(VARIANT_STYLES)


ENTRIES = {
    "01_matmul_elementwise": "matmul_elementwise",
    "02_matmul_tiled": "matmul",
    "03_blocked_sum": "blocked_sum",
    "04_weighted_sum": "weighted_sum",
}


@pytest.mark.parametrize("folder", EXAMPLES)
def test_public_surface(folder):
    example = support.load(folder)
    for name in ("VARIANTS", "reference", "check", "benchmark", "SWEEP", "main", ENTRIES[folder]):
        assert hasattr(example, name), f"{folder}/main.py has no {name}"
    assert example.VARIANTS and all(callable(fn) for fn in example.VARIANTS.values())
    assert not set(example.VARIANTS) & set(getattr(example, "UNAVAILABLE", {}))
    assert example.SWEEP and all(isinstance(case, dict) for case in example.SWEEP)


@pytest.mark.parametrize("folder", EXAMPLES)
def test_entry_is_a_registered_op(folder):
    support.load(folder)
    assert hasattr(torch.ops.triton_lessons, ENTRIES[folder]), (
        f"torch.ops.triton_lessons.{ENTRIES[folder]} is missing"
    )


@pytest.mark.parametrize("folder", [f for f in EXAMPLES if VARIANT_STYLES[f]])
def test_every_style_is_a_variant(folder):
    assert VARIANT_STYLES[folder] - {"block_ptr"} <= set(support.load(folder).VARIANTS)


@pytest.mark.parametrize("folder", [f for f in EXAMPLES if "block_ptr" in VARIANT_STYLES[f]])
def test_block_ptr_is_listed_exactly_where_it_runs(folder):
    example = support.load(folder)
    available = common.block_pointers_unavailable() is None
    assert ("block_ptr" in example.VARIANTS) == available
    assert ("block_ptr" in example.UNAVAILABLE) == (not available)
    if not available:
        assert "triton" in example.UNAVAILABLE["block_ptr"]


@pytest.mark.parametrize("folder", EXAMPLES)
def test_help_describes_the_flags(folder, capsys):
    with pytest.raises(SystemExit) as exit_info:
        support.load(folder).main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--dtype" in out and "usage" in out and "default" in out


@pytest.mark.parametrize("folder", EXAMPLES)
def test_negative_sizes_are_a_usage_error(folder, capsys):
    example = support.load(folder)
    size_flag = next(flag for flag in ("--m", "--rows") if flag in _help(example, capsys))
    with pytest.raises(SystemExit) as exit_info:
        example.main([size_flag, "-3"])
    assert exit_info.value.code == 2
    assert "usage" in capsys.readouterr().err


def _help(example, capsys):
    with pytest.raises(SystemExit):
        example.main(["--help"])
    return capsys.readouterr().out


def test_assert_close_rejects_nan_and_wrong_values_and_accepts_rounding():
    expected = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    magnitude = expected.abs()
    common.assert_close(expected.float(), expected, magnitude, 1, "rounded to float32")
    with pytest.raises(AssertionError, match="1 of 3 elements off; worst at \\(1,\\): got nan"):
        common.assert_close(
            torch.tensor([1.0, float("nan"), 3.0]), expected, magnitude, 1, "poisoned"
        )
    with pytest.raises(AssertionError, match="worst at \\(2,\\)"):
        common.assert_close(torch.tensor([1.0, 2.0, 3.001]), expected, magnitude, 1, "wrong")
    # float16 spaces numbers below 2^-14 (subnormals) 2^-24 apart: a rounding there is no error.
    subnormal = torch.tensor([1.5524e-5], dtype=torch.float64)
    common.assert_close(subnormal.half(), subnormal, subnormal, 1, "float16 subnormal")
    with pytest.raises(AssertionError, match="float16 subnormal, off"):
        common.assert_close(
            (subnormal * 1.01).half(), subnormal, subnormal, 1, "float16 subnormal, off"
        )
    with pytest.raises(AssertionError, match="shape \\(2,\\), expected \\(3,\\)"):
        common.assert_close(torch.ones(2), expected, magnitude, 1, "shape")


def test_descriptor_rules():
    assert common.descriptor_problem(torch.randn(8, 8)) is None
    assert "not a multiple of 16" in common.descriptor_problem(torch.randn(8, 10))
    assert "last stride is 8" in common.descriptor_problem(torch.randn(8, 8).t())
    assert "not 16-byte aligned" in common.descriptor_problem(torch.randn(8, 9)[:, 1:])
    assert common.descriptor_problem(torch.randn(0, 8)) == "the tensor is empty"
    huge = torch.randn(1, 8).expand(2**31, 8)  # a view: no memory behind the 2^31 rows
    assert "2^31 or more" in common.descriptor_problem(huge)


def test_print_table_aligns_columns(capsys):
    common.print_table([{"a": 1.23456, "b": None}, {"a": "long text", "b": 2}], ["a", "b"])
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0].split() == ["a", "b"]
        and lines[2].split() == ["1.235", "-"]
        and lines[3].split() == ["long", "text", "2"]
    )
    b_column = lines[0].index("b")
    assert lines[2][b_column] == "-" and lines[3][b_column] == "2"


def test_shares_memory():
    a = torch.randn(70, 70)
    assert (
        common.shares_memory(a, a)
        and common.shares_memory(a, a.t())
        and common.shares_memory(a[1:], a[:2])
    )
    assert not common.shares_memory(a[:10], a[10:]) and not common.shares_memory(
        a, torch.randn(70, 70)
    )
    assert not common.shares_memory(a[:0], a)


def test_check_out_names_the_problem():
    a = torch.randn(8, 6)
    assert common.check_out(torch.empty(8, 6), (8, 6), torch.float32, a.device, [a]) is False
    assert common.check_out(a, (8, 6), torch.float32, a.device, [a]) is True
    with pytest.raises(TypeError, match="out must be a torch.Tensor, got list"):
        common.check_out([], (8, 6), torch.float32, a.device, [a])
    with pytest.raises(
        ValueError, match=r"out is \(6, 8\) torch.float32 on cpu, expected \(8, 6\)"
    ):
        common.check_out(torch.empty(6, 8), (8, 6), torch.float32, a.device, [a])
    with pytest.raises(
        ValueError,
        match="out is \\(8, 6\\) torch.float16 on cpu, expected \\(8, 6\\) torch.float32",
    ):
        common.check_out(
            torch.empty(8, 6, dtype=torch.float16), (8, 6), torch.float32, a.device, [a]
        )
    with pytest.raises(ValueError, match=r"strides \(0, 1\).*share one memory location"):
        common.check_out(torch.empty(1, 6).expand(8, 6), (8, 6), torch.float32, a.device, [a])
    with pytest.raises(ValueError, match="not differentiable: an input requires grad"):
        common.check_out(torch.empty(8, 6), (8, 6), torch.float32, a.device, [a.requires_grad_()])


def test_result_row():
    row = common.result_row("case", "v", 2.0, 1.5, 50.0, "GB/s", 4.0, ceiling=100.0)
    assert set(row) == set(common.RESULT_COLUMNS)
    assert row["% of ceiling"] == 50.0 and row["x torch"] == 2.0 and row["graph ms"] == 1.5
    assert common.result_row("case", "v", 2.0, None, 1.0, "TFLOP/s", 2.0)["% of ceiling"] is None


def test_eager_autograd_runs_the_given_backward():
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (
            3 * x * grad
        )  # d(x^3)/dx, on purpose not what autograd would derive from forward's code

    cube = common.eager_autograd("cube", lambda x: x.detach() ** 3, setup_context, backward)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = cube(x)
    assert type(y.grad_fn).__name__ == "cubeBackward"
    (grad,) = torch.autograd.grad(y.sum(), x)
    assert torch.equal(grad, torch.tensor([3.0, 6.0]))


def test_launch_compiles_once_per_argument_class_then_launches_straight(monkeypatch):
    # On a GPU, common.launch goes through kernel[grid] (Triton's launch, which returns the compiled
    # kernel) once per class of arguments, then calls the compiled kernel with every parameter in
    # order. Stand-ins for both here.
    monkeypatch.setattr(common, "INTERPRETED", False)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(common, "_compiled", {})
    through_triton, straight = [], []

    class Compiled:
        def __getitem__(self, grid):
            return lambda *args: straight.append((grid, args))

    class Kernel:
        __name__, arg_names = "kernel", ["x_ptr", "n", "BLOCK"]
        params = [types.SimpleNamespace(is_constexpr=name == "BLOCK") for name in arg_names]

        def __getitem__(self, grid):
            return lambda *args, **constexprs: (
                through_triton.append((grid, args, constexprs)) or Compiled()
            )

    kernel, storage = Kernel(), torch.zeros(64)
    aligned, shifted = storage[:16], storage[1:17]  # shifted: 4 bytes past a 16-byte boundary
    common.launch(kernel, (4,), aligned, 32, BLOCK=64, num_warps=4)
    common.launch(
        kernel, (5,), aligned, 48, BLOCK=64, num_warps=4
    )  # 48 and 32: both multiples of 16
    assert len(through_triton) == 1 and straight == [((5, 1, 1), (aligned, 48, 64))]
    for args, constexprs in [
        ((shifted, 48), dict(BLOCK=64, num_warps=4)),
        ((aligned, 1), dict(BLOCK=64, num_warps=4)),
        ((aligned, 17), dict(BLOCK=64, num_warps=4)),
        ((aligned, 2**31), dict(BLOCK=64, num_warps=4)),
        ((aligned.double(), 48), dict(BLOCK=64, num_warps=4)),
        ((aligned, 48), dict(BLOCK=32, num_warps=4)),
        ((aligned, 48), dict(BLOCK=64, num_warps=8)),
        ((aligned, 48), dict(BLOCK=64.0, num_warps=4)),
    ]:
        common.launch(
            kernel, (4, 2), *args, **constexprs
        )  # each differs in one thing Triton compiles for
    assert len(through_triton) == 9 and len(straight) == 1
    common.launch(kernel, (4, 2), shifted, 16, BLOCK=64, num_warps=4)
    assert len(through_triton) == 9 and straight[-1] == ((4, 2, 1), (shifted, 16, 64))
    with pytest.raises(TypeError, match="pass kernel's constexpr arguments by name"):
        common.launch(
            kernel, (4,), aligned, 32, 64
        )  # BLOCK by position: its value would not be in the key


def test_tests_tune_two_configs_and_check_each_in_turn(monkeypatch):
    # support.load leaves each autotuned kernel its first config and its smallest tile;
    # pinned_config runs one at a time.
    monkeypatch.setattr(support, "ALL_CONFIGS", {})
    configs = [triton.Config({"BLOCK_N": n, "GROUP": g}) for n, g in ((64, 1), (16, 8), (32, 1))]
    module = types.SimpleNamespace(copy=triton.autotune(configs, key=["n"])(copy_kernel))
    support.keep_two_configs(module)
    assert module.copy.configs == configs[:2] and support.ALL_CONFIGS[module.copy] == configs
    with support.pinned_config(module, 4) as pinned:  # 4 wraps around to configs[1]
        assert module.copy.configs == [configs[1]] and pinned == {"copy_kernel": configs[1]}
    assert module.copy.configs == configs[:2]  # restored when the block ends
    with pytest.raises(RuntimeError, match="does not compile") as raised:
        with support.pinned_config(module, 2):
            raise RuntimeError("does not compile")
    assert raised.value.__notes__ == [f"pinned configs: {{'copy_kernel': '{configs[2]}'}}"]
    untiled = types.SimpleNamespace(
        copy=triton.autotune([triton.Config({"GROUP": g}) for g in (1, 2)], key=["n"])(copy_kernel)
    )
    with pytest.raises(ValueError, match="names no tile side"):
        support.keep_two_configs(untiled)


@triton.jit
def copy_kernel(
    x_ptr, y_ptr, n, BLOCK_N: tl.constexpr, GROUP: tl.constexpr
):  # y[:n] = x[:n]; GROUP: not a tile side
    offsets = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


def test_write_out_copies_and_bumps_the_version():
    result = torch.arange(4.0)
    assert common.write_out(result, None) is result
    out = torch.zeros(4)
    version = out._version
    assert common.write_out(result, out) is out and torch.equal(out, result)
    assert out._version > version
    version = out._version
    assert common.write_out(out, out) is out and out._version > version  # written in place


def test_kernel_out_refuses_an_out_that_requires_grad_and_avoids_overlap():
    x = torch.zeros(2, 3)
    assert common.kernel_out(None, (2, 3), torch.float32, x.device, (x,)).shape == (2, 3)
    out = torch.zeros(2, 3)
    assert common.kernel_out(out, (2, 3), torch.float32, x.device, (x,)) is out
    fresh = common.kernel_out(x, (2, 3), torch.float32, x.device, (x,))  # out is an input
    assert fresh is not x and fresh.shape == (2, 3)
    out.requires_grad_()
    with pytest.raises(ValueError, match="out requires grad"):
        common.kernel_out(out, (2, 3), torch.float32, x.device, (x,))
    with torch.no_grad():
        assert common.kernel_out(out, (2, 3), torch.float32, x.device, (x,)) is out


def test_timing_row():
    row = common.timing_row("case", "v", (2.0, 10.0), (4.0, 5.0), 50.0, "GB/s", ceiling=100.0)
    assert set(row) == set(common.TIMING_COLUMNS)
    assert row["GPU x torch"] == 2.0 and row["host x torch"] == 0.5 and row["% of ceiling"] == 50.0
    interpreted = common.timing_row("c", "v", (1.0, None), (2.0, None), 1.0, "TFLOP/s")
    assert interpreted["host x torch"] is None and interpreted["% of ceiling"] is None


@pytest.mark.skipif(support.ON_GPU, reason="what the interpreter reports; a GPU times for real")
def test_the_interpreter_has_no_host_time_and_times_wall_clock():
    calls = []
    assert common.host_us(lambda: calls.append(1)) is None and calls == []
    assert common.gpu_ms(lambda: calls.append(1), setup=lambda: calls.append(0)) >= 0
    assert calls[0] == 0 and len(calls) == 5  # setup, a first call, then three timed calls
