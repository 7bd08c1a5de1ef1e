import pytest
import torch

import support
from support import common

ex = support.load("02_matmul_tiled")

VARIANT_NAMES = list(ex.VARIANTS)
DESCRIPTOR_VARIANTS = ["descriptor", "persistent"]  # need 16-byte aligned rows
ROW_MAJOR_VARIANTS = [name for name in VARIANT_NAMES if name not in DESCRIPTOR_VARIANTS]  # take any layout
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def descriptor_aligned(n, k, dtype):
    """Whether contiguous A (M, K), B (K, N) and C (M, N) have rows of a multiple of 16 bytes."""
    size = torch.empty((), dtype=dtype).element_size()
    return (k * size) % 16 == 0 and (n * size) % 16 == 0


def assert_matches(fn, a, b, what):
    """fn(a, b) into a NaN-poisoned output against the float64 reference (for views check() does not make)."""
    out = torch.full((a.shape[0], b.shape[1]), float("nan"), dtype=a.dtype, device=common.DEVICE)
    assert fn(a, b, out=out) is out
    expected = a.double() @ b.double()
    magnitude = a.double().abs() @ b.double().abs()
    common.assert_close(out, expected, magnitude, a.shape[1], what, ex.product_roundoff(a.dtype))


@pytest.mark.parametrize(
    "m, n, k",
    [
        (1, 1, 1),
        (1, 17, 100),  # one row of A
        (17, 1, 333),  # one column of B
        (17, 100, 1),  # K = 1: one product per element
        (100, 17, 1000),  # K = 1000 = 31.25 steps of 32: the last step masked
        (333, 100, 17),  # 6 tile rows: the last program group is short
        (1000, 17, 100),  # tall: 16 tile rows, the last one partly outside
        (17, 1000, 100),  # wide
        (1001, 24, 40),  # 1001 rows; N and K give 16-byte rows: the descriptor runs too
        (100, 333, 64),  # K a multiple of the tile: no masked step
    ],
)
def test_shapes(m, n, k):
    checked = ex.check(m, n, k, torch.float32)
    expected = ROW_MAJOR_VARIANTS + (DESCRIPTOR_VARIANTS if descriptor_aligned(n, k, torch.float32) else []) + ["matmul"]
    assert sorted(checked) == sorted(expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes_every_variant(dtype):
    # M = 100 odd-sized, N = 40 and K = 72 keep rows 16-byte aligned for every dtype, so the
    # descriptor runs; K = 72 is not a multiple of BLOCK_K.
    assert sorted(ex.check(100, 40, 72, dtype)) == sorted(VARIANT_NAMES + ["matmul"])


@pytest.mark.parametrize("dtype", DTYPES)
def test_odd_sizes_every_dtype(dtype):
    # Rows of 17 elements: no descriptor; pointer (and block_ptr) and matmul's fallback must run.
    assert sorted(ex.check(33, 17, 333, dtype)) == sorted(ROW_MAJOR_VARIANTS + ["matmul"])


@pytest.mark.parametrize("dtype", DTYPES)
def test_output_has_input_dtype_and_shape(dtype):
    a = torch.randn(5, 8, device=common.DEVICE).to(dtype)
    b = torch.randn(8, 3, device=common.DEVICE).to(dtype)
    for fn in [ex.matmul, *ex.VARIANTS.values()]:
        try:
            c = fn(a, b)
        except ValueError:  # descriptors: rows of 3 elements are not 16-byte multiples
            assert fn in (ex.matmul_descriptor, ex.matmul_persistent)
            continue
        assert c.dtype == dtype and c.shape == (5, 3)


def test_float32_precision_follows_torch_setting():
    with ex.float32_matmul_precision("highest"):
        assert ex.input_precision(torch.float32) == "ieee"
    for setting in ("high", "medium"):
        with ex.float32_matmul_precision(setting):
            assert ex.input_precision(torch.float32) == "tf32"
            assert ex.input_precision(torch.float16) == "ieee"  # 16-bit inputs are unaffected
    assert ex.product_roundoff(torch.float32) == 0.0 or torch.get_float32_matmul_precision() != "highest"


@pytest.mark.parametrize("precision", ["highest", "high"])
def test_float32_under_each_precision(precision):
    # Under "highest" the bound has no TF32 term: on a GPU this fails if a kernel used TF32.
    before = torch.get_float32_matmul_precision()
    checked = ex.check(65, 48, 1000, torch.float32, precision=precision)
    assert sorted(checked) == sorted(VARIANT_NAMES + ["matmul"])
    assert torch.get_float32_matmul_precision() == before  # check() restores the setting


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("transpose_a, transpose_b", [(True, False), (False, True), (True, True)])
def test_transposed_inputs(dtype, transpose_a, transpose_b):
    # A transposed view has a last stride != 1: the descriptor refuses it, the others take it.
    checked = ex.check(100, 48, 64, dtype, transpose_a=transpose_a, transpose_b=transpose_b)
    assert sorted(checked) == sorted(ROW_MAJOR_VARIANTS + ["matmul"])


@pytest.mark.parametrize("name", VARIANT_NAMES + ["matmul"])
def test_sliced_views(name):
    fn = ex.matmul if name == "matmul" else ex.VARIANTS[name]
    big_a = torch.randn(90, 132, device=common.DEVICE)
    big_b = torch.randn(140, 72, device=common.DEVICE)
    a = big_a[::3, 2:98]  # every third row, a column window: (30, 96), base 8 bytes in
    b = big_b[4:100, ::2]  # (96, 36), column stride 2
    if name in DESCRIPTOR_VARIANTS:
        with pytest.raises(ValueError, match="tensor descriptor cannot describe"):
            fn(a, b)
        # Views that keep the descriptor's rules: bases and row strides on 16-byte multiples.
        a = big_a[::3, 4:100]  # row stride 3 * 132 floats = 1584 bytes, base 16 bytes in
        b = big_b[4:100, 8:40]  # row stride 288 bytes, base (4 * 72 + 8) * 4 = 1184 bytes in
    assert_matches(fn, a, b, f"{name} on sliced views")


@pytest.mark.parametrize("m, n, k", [(0, 5, 8), (5, 0, 8), (5, 8, 0), (0, 0, 0)])
@pytest.mark.parametrize("name", VARIANT_NAMES + ["matmul"])
def test_empty(name, m, n, k):
    fn = ex.matmul if name == "matmul" else ex.VARIANTS[name]
    a = torch.randn(m, k, device=common.DEVICE)
    b = torch.randn(k, n, device=common.DEVICE)
    c = fn(a, b)
    assert c.shape == (m, n)
    assert torch.equal(c, torch.zeros(m, n, device=common.DEVICE))  # K = 0: empty sums are 0, as in torch


def test_descriptor_refuses_what_it_cannot_describe():
    a = torch.randn(32, 17, device=common.DEVICE, dtype=torch.float16)  # rows of 34 bytes
    b = torch.randn(17, 32, device=common.DEVICE, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"a \(32, 17\).*not a multiple of 16"):
        ex.matmul_descriptor(a, b)
    a = torch.randn(32, 16, device=common.DEVICE)
    with pytest.raises(ValueError, match=r"b \(16, 32\) .* last stride is 16, not 1"):
        ex.matmul_descriptor(a, torch.randn(32, 16, device=common.DEVICE).T)
    storage = torch.randn(32 * 16 + 1, device=common.DEVICE)
    shifted = storage[1:].view(32, 16)  # base 4 bytes past an aligned address
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        ex.matmul_descriptor(a, shifted[:16])
    out = torch.empty(32, 6, device=common.DEVICE)[:, :4]  # rows 24 bytes apart
    with pytest.raises(ValueError, match=r"the output \(32, 4\) .* 24 bytes"):
        ex.matmul_descriptor(a, torch.randn(16, 4, device=common.DEVICE), out=out)


def test_matmul_takes_the_persistent_kernel_when_it_can(monkeypatch):
    calls = []
    persistent = ex.matmul_persistent
    monkeypatch.setattr(ex, "matmul_persistent", lambda a, b, out=None: calls.append(1) or persistent(a, b, out))
    a = torch.randn(20, 32, device=common.DEVICE, dtype=torch.float16)
    ex.matmul(a, torch.randn(32, 16, device=common.DEVICE, dtype=torch.float16))
    assert calls == [1]
    ex.matmul(a, torch.randn(16, 32, device=common.DEVICE, dtype=torch.float16).T)  # transposed B
    ex.matmul(a, torch.randn(32, 12, device=common.DEVICE, dtype=torch.float16))  # rows of 24 bytes
    with ex.float32_matmul_precision("highest"):
        ex.matmul(a.float(), torch.randn(32, 16, device=common.DEVICE))  # exact float32: the pointer kernel
    ex.matmul(a.double(), torch.randn(32, 16, device=common.DEVICE, dtype=torch.float64))  # float64: likewise
    assert calls == [1]
    with ex.float32_matmul_precision("high"):  # TF32 reads B^T, so B may have any layout
        ex.matmul(a.float(), torch.randn(16, 32, device=common.DEVICE).T)
    assert calls == [1, 1]


@pytest.mark.parametrize("transposed_b", [False, True])
@pytest.mark.parametrize("k", [5, 96])
def test_persistent_tf32_reads_b_transposed(transposed_b, k):
    # Under TF32 the persistent kernel reads B^T: a transposed view is used as it lies, any other
    # B is copied by transpose_kernel, into rows padded to 16 bytes when K * 4 is not a multiple.
    a = torch.randn(30, 8, device=common.DEVICE)[:, :k] if k < 8 else torch.randn(30, k, device=common.DEVICE)
    b = torch.randn(12, k, device=common.DEVICE).T if transposed_b else torch.randn(k, 12, device=common.DEVICE)
    with ex.float32_matmul_precision("high"):
        assert_matches(ex.matmul_persistent, a, b, f"persistent TF32, K = {k}, transposed b: {transposed_b}")


def test_persistent_refuses_what_it_cannot_describe():
    a = torch.randn(32, 16, device=common.DEVICE, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"matmul_persistent: .*b \(16, 32\) .* last stride is 16, not 1"):
        ex.matmul_persistent(a, torch.randn(32, 16, device=common.DEVICE, dtype=torch.bfloat16).T)
    with pytest.raises(ValueError, match=r"matmul_persistent: .*a \(32, 5\)"), ex.float32_matmul_precision("high"):
        ex.matmul_persistent(torch.randn(32, 5, device=common.DEVICE), torch.randn(5, 8, device=common.DEVICE))


def test_bad_input():
    a = torch.randn(4, 6, device=common.DEVICE)
    b = torch.randn(6, 5, device=common.DEVICE)
    with pytest.raises(TypeError, match="a must be a torch.Tensor, got list"):
        ex.matmul([[1.0]], b)
    with pytest.raises(TypeError, match="dtype torch.int32"):
        ex.matmul(a.int(), b)
    with pytest.raises(TypeError, match="torch.float32 and torch.float16"):
        ex.matmul(a, b.half())
    with pytest.raises(ValueError, match=r"b must be 2-D, got shape \(6,\)"):
        ex.matmul(a, b[:, 0])
    with pytest.raises(ValueError, match=r"a must be 2-D, got shape \(2, 4, 6\)"):
        ex.matmul(torch.randn(2, 4, 6, device=common.DEVICE), b)
    with pytest.raises(ValueError, match=r"a \(4, 6\) and b \(5, 6\) do not chain: 6 != 5"):
        ex.matmul(a, b.T)
    with pytest.raises(ValueError, match="is on meta"):
        ex.matmul(a, torch.randn(6, 5, device="meta"))
    with pytest.raises(ValueError, match=r"out is \(5, 4\)"):
        ex.matmul(a, b, out=torch.empty(5, 4, device=common.DEVICE))
    with pytest.raises(ValueError, match="out is .* torch.float16"):
        ex.matmul(a, b, out=torch.empty(4, 5, device=common.DEVICE, dtype=torch.float16))
    for fn in ex.VARIANTS.values():
        with pytest.raises(ValueError, match="do not chain"):
            fn(a, b.T)


def test_main_runs(capsys):
    ex.main(["--m", "20", "--n", "24", "--k", "40", "--dtype", "float32"])
    printed = capsys.readouterr().out
    assert "match a float64 reference" in printed
    for name in ["torch", *VARIANT_NAMES]:
        assert f" {name} " in printed
        if name != "torch":
            assert f"{name} config: BLOCK_M=" in printed


def test_sweep_covers_the_issue_sizes():
    cases = {(c["m"], c["dtype"], c["precision"]) for c in ex.SWEEP}
    assert cases == {(s, d, "high") for s in (4096, 8192) for d in ("float16", "bfloat16", "float32")}


@support.gpu_only
@pytest.mark.parametrize(
    "dtype, precision",
    [(torch.float16, None), (torch.bfloat16, None), (torch.float32, "highest"), (torch.float32, "high"),
     (torch.float64, None)],
)
def test_large_on_gpu(dtype, precision):
    # Bounds without a TF32 term under "highest": fails if a kernel used TF32 there.
    assert sorted(ex.check(4096, 4096, 4096, dtype, precision=precision)) == sorted(VARIANT_NAMES + ["matmul"])
    assert sorted(ex.check(3001, 1001, 5000, dtype, precision=precision)) == sorted(ROW_MAJOR_VARIANTS + ["matmul"])


def assert_first_and_last_rows(a, b, c, name):
    """Check the first and last 64 rows of c = a @ b, where 64-bit offsets matter most."""
    m = a.shape[0]
    for rows in (slice(0, 64), slice(m - 64, m)):
        expected = a[rows].double() @ b.double()
        magnitude = a[rows].double().abs() @ b.double().abs()
        common.assert_close(c[rows], expected, magnitude, a.shape[1], f"{name} rows {rows}")


@support.gpu_only
@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_offsets_past_2_to_31_on_gpu(name):
    # A with 2**31 + 2**13 elements: row * stride passes 2**31 in the last rows.
    m, k, n = 2**18 + 1, 2**13, 16
    a = torch.randn(m, k, device=common.DEVICE, dtype=torch.float16)
    b = torch.randn(k, n, device=common.DEVICE, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device=common.DEVICE, dtype=torch.float16)
    ex.VARIANTS[name](a, b, out=c)
    assert_first_and_last_rows(a, b, c, name)


@support.gpu_only
@pytest.mark.parametrize("name", ROW_MAJOR_VARIANTS)
def test_transposed_stride_past_2_to_31_on_gpu(name):
    # A transposed view with 2**25 + 17 rows: BLOCK_K * stride_ak passes 2**31.
    m, k, n = 2**25 + 17, 64, 16
    a = torch.randn(k, m, device=common.DEVICE, dtype=torch.float16).T
    b = torch.randn(k, n, device=common.DEVICE, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device=common.DEVICE, dtype=torch.float16)
    ex.VARIANTS[name](a, b, out=c)
    assert_first_and_last_rows(a, b, c, name)
