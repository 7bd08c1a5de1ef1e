"""What every example promises (CONTRIBUTING.md), and the shared helpers in common/."""

import pytest
import torch

import support
from support import common

EXAMPLES = [path.parent.name for path in common.example_paths()]
VARIANT_STYLES = {"01_matmul_elementwise": set(), "02_matmul_tiled": {"pointer", "block_ptr", "descriptor", "persistent"},
                  "03_blocked_sum": {"pointer", "block_ptr", "descriptor"},
                  "04_weighted_sum": {"pointer", "block_ptr", "descriptor"}}


def test_all_four_lessons_exist():
    assert EXAMPLES == list(VARIANT_STYLES)


@pytest.mark.parametrize("folder", EXAMPLES)
def test_public_surface(folder):
    example = support.load(folder)
    for name in ("VARIANTS", "UNAVAILABLE", "reference", "check", "benchmark", "SWEEP", "main"):
        assert hasattr(example, name), f"{folder}/main.py has no {name}"
    assert example.VARIANTS and all(callable(fn) for fn in example.VARIANTS.values())
    assert not set(example.VARIANTS) & set(example.UNAVAILABLE)
    assert example.SWEEP and all(isinstance(case, dict) for case in example.SWEEP)


@pytest.mark.parametrize("folder", [f for f in EXAMPLES if VARIANT_STYLES[f]])
def test_block_ptr_is_listed_exactly_where_it_runs(folder):
    example = support.load(folder)
    available = common.block_pointers_unavailable() is None
    assert VARIANT_STYLES[folder] - {"block_ptr"} <= set(example.VARIANTS)
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
    assert "--dtype" in out and "usage" in out


def test_assert_close_rejects_nan_and_wrong_values_and_accepts_rounding():
    expected = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    magnitude = expected.abs()
    common.assert_close(expected.float(), expected, magnitude, 1, "rounded to float32")
    with pytest.raises(AssertionError, match="1 of 3 elements off; worst at \\(1,\\): got nan"):
        common.assert_close(torch.tensor([1.0, float("nan"), 3.0]), expected, magnitude, 1, "poisoned")
    with pytest.raises(AssertionError, match="worst at \\(2,\\)"):
        common.assert_close(torch.tensor([1.0, 2.0, 3.001]), expected, magnitude, 1, "wrong")
    with pytest.raises(AssertionError, match="shape \\(2,\\), expected \\(3,\\)"):
        common.assert_close(torch.ones(2), expected, magnitude, 1, "shape")


def test_descriptor_rules():
    assert common.descriptor_unsupported(torch.randn(8, 8)) is None
    assert "not a multiple of 16" in common.descriptor_unsupported(torch.randn(8, 10))
    assert "last stride is 8" in common.descriptor_unsupported(torch.randn(8, 8).t())
    assert "not 16-byte aligned" in common.descriptor_unsupported(torch.randn(8, 9)[:, 1:])
    assert common.descriptor_unsupported(torch.randn(0, 8)) == "the tensor is empty"
    huge = torch.randn(1, 8).expand(2**31, 8)  # a view: no memory behind the 2^31 rows
    assert "2^31 or more" in common.descriptor_unsupported(huge)


def test_print_table_aligns_columns(capsys):
    common.print_table([{"a": 1.23456, "b": None}, {"a": "long text", "b": 2}], ["a", "b"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["a", "b"] and lines[2].split() == ["1.235", "-"] and lines[3].split() == ["long", "text", "2"]
    b_column = lines[0].index("b")
    assert lines[2][b_column] == "-" and lines[3][b_column] == "2"
