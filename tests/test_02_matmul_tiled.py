"""Tests for 02_matmul_tiled: the lesson (main.py: every variant, forward and gradients, on every
size, dtype and layout; the persistent kernel's rules; the Function; main) and the op (op.py:
dispatch, the fused bias and GELU, out=, second derivatives, the registered ops with opcheck and
torch.compile, bad input through every entry)."""

import re

import pytest
import torch

import support
from support import common
from tools import asm

ex = support.load("02_matmul_tiled")
fu = support.load_beside("02_matmul_tiled", "fused.py")  # Part 3: the fused kernel
pe = support.load_beside("02_matmul_tiled", "persistent.py")  # Part 4: the persistent kernel
sk = support.load_beside("02_matmul_tiled", "stream_k.py")  # Part 5: stream-K
op = support.load_op("02_matmul_tiled")
DEVICE = common.DEVICE

VARIANT_NAMES = list(pe.VARIANTS)  # main.py's simple, tuned; fused.py's fused; persistent
WRAPPERS = {
    "simple": ex.matmul_simple,
    "tuned": ex.matmul_tuned,
    "fused": fu.matmul_fused,
    "persistent": pe.matmul_persistent,
}
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
LAYOUTS = [(False, False), (False, True), (True, False), (True, True)]  # transpose_a, transpose_b
DTYPE_PRECISIONS = [
    (torch.float16, None),
    (torch.bfloat16, None),
    (torch.float32, "highest"),
    (torch.float32, "high"),
    (torch.float64, None),
]
BIG = 256  # more than 128 rows of A: matmul runs the persistent kernel where it can


def descriptor_aligned(n, k, dtype):
    """Whether contiguous A (M, K), B (K, N) and C (M, N) have rows of a multiple of 16 bytes."""
    size = torch.empty((), dtype=dtype).element_size()
    return (k * size) % 16 == 0 and (n * size) % 16 == 0


def roundoff(dtype):  # one product's error: TF32's 10-bit mantissas, or none
    return common.TF32_ROUNDOFF if fu.input_precision(dtype) == "tf32" else 0.0


def expected_variants(n, k, dtype):
    """The variants that take row-major a (M, K) @ b (K, N), and op.py's matmul."""
    names = ["fused", "matmul"] + ([] if dtype == torch.float64 else ["simple", "tuned"])
    if dtype != torch.float64 and descriptor_aligned(n, k, dtype):
        names.append("persistent")
    return sorted(names)


def check_all(fn, a, b, what):
    """The lesson's check (C) and check_gradients (the backward's two products), each against
    float64, with torch.empty's memory NaN (as main() runs them): an unwritten element fails."""
    with common.uninitialized_memory_is_nan():
        ex.check(fn, a, b, f"{what}: C")
        ex.check_gradients(fn, a, b, what)


def check_every_variant(m, n, k, dtype, precision=None, transpose_a=False, transpose_b=False):
    """check_all (the output and both gradients, against float64) on each variant that takes
    these inputs, and on op.py's matmul; their names."""
    with support.float32_matmul_precision(precision):
        a = common.random_matrix(m, k, dtype, transpose_a)
        b = common.random_matrix(k, n, dtype, transpose_b)
        variants = pe.variants_for(a, b) | {"matmul": op.matmul}
        for name, fn in variants.items():
            what = f"{name} {m}x{n}x{k} {dtype} {precision}, transposed {transpose_a, transpose_b}"
            check_all(fn, a, b, what)
    return sorted(variants)


# ---- The lesson: every variant, forward and gradients ----


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
        (600, 130, 40),  # 10 x 3 tiles of 64: two program groups of GROUP_M = 8 rows, one short
    ],
)
def test_shapes(m, n, k):
    assert check_every_variant(m, n, k, torch.float32) == expected_variants(n, k, torch.float32)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes_every_variant(dtype):
    # N = 40 and K = 72 keep rows 16-byte aligned for every dtype, so the descriptor runs (not for
    # float64: the fused kernel takes it); K = 72 is no BLOCK_K multiple.
    assert check_every_variant(100, 40, 72, dtype) == expected_variants(40, 72, dtype)


@support.gpu_only
@pytest.mark.parametrize("index", range(support.most_configs(ex)))
def test_every_config_on_gpu(index):
    # The other tests tune between two configs per kernel (support.load): here the tuned and
    # fused kernels run their config `index`, on float16 (every config fits a Hopper GPU's shared
    # memory).
    with support.pinned_config(ex, index), support.pinned_config(fu, index):
        checked = check_every_variant(333, 136, 200, torch.float16)
    assert checked == expected_variants(136, 200, torch.float16)


@support.gpu_only
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("m, n, block_n", [(4096, 4096, 256), (304, 512, 128), (1000, 24, 256)])
@pytest.mark.parametrize("transpose_a, transpose_b", LAYOUTS)
def test_every_persistent_tile_on_gpu(dtype, m, n, block_n, transpose_a, transpose_b):
    # wide_tiles' wide (128 x 256, float32's C stored in halves) and narrow tiles, each dtype
    # and layout; at N = 24 both widths give as many tiles, and the wide one wins the tie.
    assert (256 if pe.wide_tiles(m, n, common.sm_count(DEVICE)) else 128) == block_n
    a = common.random_matrix(m, 72, dtype, transpose_a)
    b = common.random_matrix(72, n, dtype, transpose_b)
    for precision in ("highest", "high") if dtype == torch.float32 else (None,):
        with support.float32_matmul_precision(precision):
            check_all(pe.VARIANTS["persistent"], a, b, f"persistent {m}x{n} {dtype} {precision}")


STREAM_K_KERNELS = pytest.mark.parametrize(
    "matmul", [sk.matmul_stream_k, sk.matmul_stream_k_simple], ids=["stream_k", "simple"]
)


@STREAM_K_KERNELS
@pytest.mark.parametrize("dtype, precision", DTYPE_PRECISIONS[:4])
@pytest.mark.parametrize("transpose_a, transpose_b", LAYOUTS)
def test_stream_k_every_layout_every_dtype(matmul, dtype, precision, transpose_a, transpose_b):
    # 4 tiles of 128 x 128 (12 of 64 x 64 in the simple kernel) and K = 200 (4 to 7 K steps a
    # tile) on the interpreter's 3 "SMs": runs end inside tiles, so owners add partials. C, the
    # backward's products and (the fast kernel's) epilogue.
    a = common.random_matrix(256, 200, dtype, transpose_a)
    b = common.random_matrix(200, 136, dtype, transpose_b)
    with support.float32_matmul_precision(precision):
        check_all(matmul, a, b, f"{matmul.__name__} {dtype} {precision}")
        if matmul is sk.matmul_stream_k:
            sk.check_epilogue(a, b)


@STREAM_K_KERNELS
@pytest.mark.parametrize("k", [16, 64, 640])
def test_stream_k_with_fewer_tiles_than_programs(matmul, k):
    # One tile: at K = 640 (10 or 20 steps) three programs share it, the owner waiting on two;
    # at K = 16 (one step) two programs have no iteration at all.
    a, b = common.random_matrix(64, k, torch.float16), common.random_matrix(k, 64, torch.float16)
    check_all(matmul, a, b, f"{matmul.__name__} 64x64x{k}")


def test_stream_k_simple_with_no_k_steps_is_zeros():
    # With K = 0 there are no iterations to share out, so no program stores: C is zeros, not
    # the memory torch.empty left there (NaN here).
    a, b = torch.randn(16, 0, device=DEVICE), torch.randn(0, 8, device=DEVICE)
    with common.uninitialized_memory_is_nan():
        c = sk.matmul_stream_k_simple(a.half(), b.half())
    assert torch.equal(c, torch.zeros(16, 8, dtype=torch.float16, device=DEVICE))


@support.gpu_only
@STREAM_K_KERNELS
@pytest.mark.parametrize("transpose_a, transpose_b", LAYOUTS)
def test_stream_k_is_deterministic_and_replays_in_a_cuda_graph_on_gpu(
    matmul, transpose_a, transpose_b
):
    # An owner adds the partials in a fixed order, so two calls give the same bits: a race on a
    # flag or a partial would show as a difference. The flags start at 0 each call, and a CUDA
    # graph replays the kernel with them. d = 768's weight gradient, at 1024 tokens.
    a = common.random_matrix(768, 1024, torch.bfloat16, transpose_a)
    b = common.random_matrix(1024, 3072, torch.bfloat16, transpose_b)
    first = matmul(a, b)
    common.assert_close(first, *reference64(a, b), 1024, "stream_k on the GPU")
    for _ in range(3):
        assert torch.equal(matmul(a, b), first)
    matmul(a, b)  # compiled and loaded before the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        replayed = matmul(a, b)
    for _ in range(2):
        replayed.zero_()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(replayed, first)


def test_persistent_tile_rule():
    assert pe.wide_tiles(4096, 4096, 132)
    assert pe.wide_tiles(1024, 4096, 132)  # 8 x 16 tiles: 128 SMs
    assert not pe.wide_tiles(512, 4096, 132)  # 4 x 16 tiles: 64 SMs
    # 3072^3: 288 wide tiles fill 73% of three turns of 132 programs, 576 narrow ones 87% of five
    assert not pe.wide_tiles(3072, 3072, 132)


@pytest.mark.parametrize("m, n, element_size, expected", [
    (4096, 4096, 2, dict(BLOCK_N=256, BLOCK_K=64, STORE_HALVES=False, num_stages=3, num_warps=8)),
    (4096, 4096, 4, dict(BLOCK_N=256, BLOCK_K=32, STORE_HALVES=True, num_stages=3, num_warps=8)),
    (512, 4096, 4, dict(BLOCK_N=128, BLOCK_K=32, STORE_HALVES=False, num_stages=5, num_warps=4)),
])  # fmt: skip
def test_persistent_heuristics(m, n, element_size, expected):
    # What @triton.heuristics sets at a launch, as tools/asm.py evaluates it for --asm.
    a = torch.empty(0, dtype={2: torch.float16, 4: torch.float32}[element_size])
    named = dict(M=m, N=n, PROGRAMS=132, a_ptr=a)
    values = asm.with_heuristics(pe.persistent_matmul_kernel, (), named)
    assert {name: values[name] for name in expected} == expected


@pytest.mark.parametrize("dtype", DTYPES)
def test_odd_sizes_every_dtype(dtype):
    # Rows of 17 elements: no descriptor; simple, tuned, fused and matmul's fallback must run.
    assert check_every_variant(33, 17, 333, dtype) == expected_variants(17, 333, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_output_has_input_dtype_and_shape(dtype):
    a = torch.randn(5, 8, device=DEVICE).to(dtype)
    b = torch.randn(8, 3, device=DEVICE).to(dtype)
    for fn in [op.matmul, *pe.variants_for(a, b).values()]:
        c = fn(a, b)
        assert c.dtype == dtype and c.shape == (5, 3)


def test_float32_precision_follows_torch_setting():
    with support.float32_matmul_precision("highest"):
        assert fu.input_precision(torch.float32) == "ieee"
    for setting in ("high", "medium"):
        with support.float32_matmul_precision(setting):
            assert fu.input_precision(torch.float32) == "tf32"
            assert fu.input_precision(torch.float16) == "ieee"  # 16-bit inputs are unaffected


@pytest.mark.parametrize("name", ["fused", "persistent", "matmul"])
def test_highest_precision_runs_no_tf32(name):
    # The lesson's check allows TF32's rounding in any float32 dot (main.py's kernels always
    # use it); here the bound has no TF32 term: on a GPU this fails if a kernel used TF32.
    fn = op.matmul if name == "matmul" else WRAPPERS[name]
    with support.float32_matmul_precision("highest"):
        a, b = common.random_matrix(192, 1000), common.random_matrix(1000, 48)
        expected, magnitude = reference64(a, b)
        with common.uninitialized_memory_is_nan():
            c = fn(a, b)
        common.assert_close(c, expected, magnitude, 1000, f"{name} under highest")


@pytest.mark.parametrize("dtype, precision", DTYPE_PRECISIONS)
@pytest.mark.parametrize("transpose_a, transpose_b", LAYOUTS)
def test_every_layout_every_dtype(dtype, precision, transpose_a, transpose_b):
    # A and B each row-major or a transposed view (as autograd hands them): the persistent kernel
    # reads a transposed one where it lies, or under TF32 copies it. M = 136, N = 48 and K = 72
    # keep the rows of A, B, A^T and B^T 16-byte aligned in every dtype.
    checked = check_every_variant(136, 48, 72, dtype, precision, transpose_a, transpose_b)
    names = ["fused", "matmul"]
    names += [] if dtype == torch.float64 else ["simple", "tuned", "persistent"]
    assert checked == sorted(names)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_a_transposed_with_rows_not_16_byte_aligned(dtype):
    # A^T (64, 100) has rows of 100 elements, 200 bytes in float16: no descriptor takes them, and
    # matmul runs the fused kernel. Under TF32 the persistent kernel copies A to K-major first.
    with support.float32_matmul_precision("high"):
        checked = check_every_variant(100, 48, 64, dtype, transpose_a=True)
    names = ["simple", "tuned", "fused", "matmul"]
    names += ["persistent"] if dtype == torch.float32 else []
    assert checked == sorted(names)


@pytest.mark.parametrize("name", VARIANT_NAMES + ["matmul"])
def test_sliced_views(name):
    fn = op.matmul if name == "matmul" else pe.VARIANTS[name]
    big_a = torch.randn(90, 132, device=DEVICE)
    big_b = torch.randn(140, 72, device=DEVICE)
    a = big_a[::3, 2:98]  # every third row, a column window: (30, 96), base 8 bytes in
    b = big_b[4:100, ::2]  # (96, 36), column stride 2
    if name == "persistent":
        with support.float32_matmul_precision("highest"):
            with pytest.raises(AssertionError, match="no descriptor for a"):
                fn(a, b)
        # Views that keep the descriptor's rules: bases and row strides on 16-byte multiples.
        a = big_a[::3, 4:100]  # row stride 3 * 132 floats = 1584 bytes, base 16 bytes in
        b = big_b[4:100, 8:40]  # row stride 288 bytes, base (4 * 72 + 8) * 4 = 1184 bytes in
    check_all(fn, a, b, f"{name} on sliced views")


@pytest.mark.parametrize("m, n, k", [(0, 5, 8), (5, 0, 8), (5, 8, 0), (0, 0, 0)])
def test_empty(m, n, k):
    a = torch.randn(m, k, device=DEVICE)
    b = torch.randn(k, n, device=DEVICE)
    variants = pe.variants_for(a, b) | {"matmul": op.matmul}
    assert "persistent" not in variants  # a descriptor takes no empty tensor
    for name, fn in variants.items():
        c = fn(a, b)
        assert c.shape == (m, n), name
        assert torch.equal(c, torch.zeros(m, n, device=DEVICE)), name  # K = 0: sums of nothing


def test_the_lesson_asserts_what_its_kernels_cannot_take():
    a, b = torch.randn(4, 6, device=DEVICE), torch.randn(6, 5, device=DEVICE)
    for fn in WRAPPERS.values():
        with pytest.raises(AssertionError, match="must match b's rows"):
            fn(a, b.T)
    for fn in (ex.matmul_simple, ex.matmul_tuned):
        with pytest.raises(AssertionError, match="float64"):
            fn(a.double(), b.double())
    with pytest.raises(AssertionError, match="no float64"):
        pe.matmul_persistent(a.double(), b.double())


@pytest.mark.parametrize("name", ["simple", "tuned"])
def test_main_pys_kernels_refuse_offsets_past_2_to_31(name):
    # Their offsets are int32: the wrappers refuse a tensor of 2^31 elements or more before a
    # launch could wrap them around (meta tensors: shapes with no memory behind them).
    a = torch.empty(2**16, 2**15, dtype=torch.float16, device="meta")  # 2^31 elements
    b = torch.empty(2**15, 1, dtype=torch.float16, device="meta")
    with pytest.raises(AssertionError, match="int32 offsets: see fused.py"):
        WRAPPERS[name](a, b)
    with pytest.raises(AssertionError, match="int32"):  # a transposed view reaches as far
        WRAPPERS[name](b.T, a.T)


def test_persistent_problem_names_what_a_descriptor_cannot_take():
    half = dict(device=DEVICE, dtype=torch.float16)
    a, b = torch.randn(32, 17, **half), torch.randn(17, 32, **half)  # rows of 34 bytes
    c = torch.empty(32, 32, **half)
    assert re.search(r"a \(32, 17\).*not a positive multiple of 16", pe.persistent_problem(a, b, c))
    a = torch.randn(32, 16, device=DEVICE)
    b = torch.randn(16, 64, device=DEVICE)[:, ::2]
    with support.float32_matmul_precision("highest"):
        problem = pe.persistent_problem(a, b, torch.empty(32, 32, device=DEVICE))
    assert re.search(r"b \(16, 32\) .* last stride is 2, not 1", problem)
    shifted = torch.randn(32 * 16 + 1, device=DEVICE)[1:].view(32, 16)  # base 4 bytes past 16
    with support.float32_matmul_precision("highest"):
        problem = pe.persistent_problem(a, shifted[:16], torch.empty(32, 16, device=DEVICE))
    assert "not 16-byte aligned" in problem
    out = torch.empty(32, 6, device=DEVICE)[:, :4]  # rows 24 bytes apart
    b = torch.randn(16, 4, device=DEVICE)
    assert re.search(r"the output \(32, 4\) .* 24 bytes", pe.persistent_problem(a, b, out))
    assert "no float64" in pe.persistent_problem(a.double(), b.double(), out.double())
    with support.float32_matmul_precision("high"):  # TF32 copies A and B, but writes C in place
        problem = pe.persistent_problem(a[:, :5], b[:5], torch.empty(32, 5, device=DEVICE))
    assert re.search(r"the output \(32, 5\)", problem)


@pytest.mark.parametrize("transpose_a, transpose_b", LAYOUTS)
@pytest.mark.parametrize("k", [5, 96])
def test_persistent_tf32_copies_what_is_not_k_major(transpose_a, transpose_b, k):
    # Under TF32 the persistent kernel reads A and B^T, rows contiguous: a view laid out so is
    # read as it lies, any other is copied by transpose_kernel, into rows padded to 16 bytes when
    # K * 4 is not a multiple (K = 5 also makes a row-major A, of 20-byte rows, a copy).
    a = common.random_matrix(30, k, torch.float32, transpose_a)
    b = common.random_matrix(k, 16, torch.float32, transpose_b)
    with support.float32_matmul_precision("high"), common.uninitialized_memory_is_nan():
        c = pe.matmul_persistent(a, b)
    what = f"persistent TF32, K = {k}, layout {transpose_a, transpose_b}"
    common.assert_close(c, *reference64(a, b), k, what, common.TF32_ROUNDOFF)


def test_the_lessons_function_refuses_a_second_derivative():
    # Its backward launches kernels, which autograd cannot see into: it raises, never a wrong 0.
    a = torch.randn(5, 4, device=DEVICE, requires_grad=True)
    b = torch.randn(4, 3, device=DEVICE, requires_grad=True)
    (grad_a,) = torch.autograd.grad(ex.Matmul.apply(a, b).sum(), a, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|does not require grad"):
        torch.autograd.grad(grad_a.sum(), b)


@pytest.mark.parametrize("wrong", ["a row of C", "grad_b"])
def test_check_catches_a_wrong_answer(wrong):
    a, b = common.random_matrix(40, 24), common.random_matrix(24, 16)

    def broken(x, y):
        c = ex.matmul_tuned(x, y)
        if wrong == "a row of C" and x is a:
            c[7] = 0.0
        if wrong == "grad_b" and x.shape[0] == 24:  # a.T @ grad_c: (24, 40) @ (40, 16)
            c *= 0.5
        return c

    if wrong == "a row of C":
        ex.check_gradients(broken, a, b, "broken")  # the backward's products are right
        with pytest.raises(AssertionError, match="broken: [0-9]+ of 640 elements off"):
            ex.check(broken, a, b, "broken")
    else:
        ex.check(broken, a, b, "broken")  # C is right
        with pytest.raises(AssertionError, match="broken: grad_b"):
            ex.check_gradients(broken, a, b, "broken")


def test_check_catches_a_wrong_dtype():
    a, b = common.random_matrix(4, 8), common.random_matrix(8, 3)
    with pytest.raises(AssertionError, match="wrong: is torch.float64"):
        ex.check(lambda a, b: ex.matmul_tuned(a, b).double(), a, b, "wrong")


@pytest.mark.parametrize("dtype", DTYPES)
def test_check_epilogue_passes_the_fused_gelu_and_catches_a_wrong_one(monkeypatch, dtype):
    a, b = common.random_matrix(40, 33, dtype), common.random_matrix(33, 24, dtype)
    fu.check_epilogue(a, b)
    right = fu.matmul_fused

    def without_gelu(a, b, bias, activation):  # the bias added, GELU left out
        return right(a, b, bias)

    monkeypatch.setattr(fu, "matmul_fused", without_gelu)
    with pytest.raises(AssertionError, match="fused \\+ bias \\+ GELU: .* elements off"):
        fu.check_epilogue(a, b)


@pytest.mark.parametrize(
    "lesson", [ex, fu, pe, sk], ids=["main.py", "fused.py", "persistent.py", "stream_k.py"]
)
def test_main_runs(capsys, lesson):
    assert lesson.main(["--m", "20", "--n", "24", "--k", "40", "--dtype", "float32"]) == 0
    printed = capsys.readouterr().out
    a, b = torch.ones(20, 40, device=DEVICE), torch.ones(40, 24, device=DEVICE)
    names = list(lesson.variants_for(a, b))
    if lesson is sk:  # Part 4's kernel and this file's two
        assert names == ["persistent", "stream_k_simple", "stream_k"]
    else:
        assert names == list(lesson.VARIANTS)
    assert f"check 20x24x40 float32: {', '.join(names)} match float64, grads too" in printed
    epilogue = "check 20x24x40 float32: fused + bias + GELU match float64"
    assert (epilogue in printed) == (lesson is not ex)  # main.py has no epilogue
    assert "backward(grad_c): a.grad - grad_c @ b.T, both float32: at most " in printed
    for name in ["torch", "matmul_kernel[grid] bare", *names]:
        assert f" {name} " in printed


@pytest.mark.parametrize("lesson", [ex, sk], ids=["main.py", "stream_k.py"])
def test_main_defaults_to_the_case_of_its_file(capsys, lesson):
    size = 256 if common.INTERPRETED else 4096
    m, n, k, dtype = getattr(lesson, "CASE", (size, size, size, "float16"))
    if lesson is sk:  # few tiles, long K: where stream-K pays
        assert k > max(m, n) and dtype in ("float16", "bfloat16")
    with pytest.raises(SystemExit):
        lesson.main(["--help"])
    printed = " ".join(capsys.readouterr().out.split())
    for about, value in [("rows of A and C", m), ("columns of B and C", n)]:
        assert f"{about} (default: {value})" in printed
    assert f"columns of A, rows of B (default: {k})" in printed
    assert f"of A, B and C (default: {dtype})" in printed
    assert "schedule(" not in printed  # --help prints the usage only


def test_stream_k_prints_its_example_and_how_busy_each_kernel_keeps_the_sms(capsys):
    sk.print_example()
    printed = capsys.readouterr().out
    for programs in (3, 5):
        assert f"schedule(2, 4, {programs}):\n{sk.schedule(2, 4, programs)}\n" in printed
    assert printed.count("stream_k_in_torch, 2x8 @ 8x4: at most ") == 2
    # 144 tiles in 2 turns of 132; 18432 iterations in runs of at most 140
    assert "Part 4's 128 x 128 tiles keep 55% of the SMs' time busy" in printed
    assert "stream-K's runs 99.7%" in printed


def test_each_part_adds_its_kernel_to_the_lessons_variants():
    assert list(ex.VARIANTS) == ["simple", "tuned"]
    assert list(fu.VARIANTS) == ["simple", "tuned", "fused"]
    assert list(pe.VARIANTS) == ["simple", "tuned", "fused", "persistent"]
    assert list(sk.VARIANTS) == [
        "simple", "tuned", "fused", "persistent", "stream_k_simple", "stream_k"
    ]  # fmt: skip
    assert pe.grouped_tile is fu.grouped_tile is ex.grouped_tile  # one copy of Part 2's helpers
    assert sk.grouped_tile is ex.grouped_tile and sk.persistent is pe
    assert pe.add_bias is fu.add_bias and pe.fused is fu and fu.lesson is ex


def test_main_leaves_out_a_variant_descriptors_cannot_take(capsys):
    assert pe.main(["--m", "33", "--n", "65", "--k", "17", "--dtype", "float32"]) == 0
    printed = capsys.readouterr().out
    assert "check 33x65x17 float32: simple, tuned, fused match float64, grads too" in printed
    assert not re.search(r"^33x65x17 .*  persistent  ", printed, re.M)  # no row in the table
    # and says so, and why (it had left the kernel out without a word)
    assert "not checked at 33x65x17 float32, persistent: no descriptor for" in printed


@pytest.mark.parametrize(
    "argv", [["--m", "-3"], ["--n", "-1"], ["--k", "-5"], ["--m", "0"], ["--k", "0"]]
)
def test_a_size_under_1_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        ex.main(argv)
    assert exit_info.value.code == 2
    assert "sizes must be 1 or more" in capsys.readouterr().err


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        ex.main(["--help"])
    printed = " ".join(capsys.readouterr().out.split())
    size = 256 if common.INTERPRETED else 4096  # small where the interpreter runs the kernels
    for meaning in ("rows of A and C", "columns of B and C", "columns of A, rows of B"):
        assert f"{meaning} (default: {size})" in printed
    assert "of A, B and C (default: float16)" in printed


def test_sweep_covers_the_issue_sizes():
    cases = {(c["m"], c["n"], c["k"], c["dtype"], c.get("precision")) for c in ex.SWEEP}
    cubes = {(s, s, s, d, "high") for s in (4096, 8192) for d in ("float16", "bfloat16", "float32")}
    beyond_cubes = [
        (4000, 4000, 4000),
        (8192, 8192, 512),
        (128, 4096, 4096),
        (16, 8192, 8192),
        (1000, 1001, 999),
    ]
    assert cases == cubes | {
        (*shape, d, None) for shape in beyond_cubes for d in ("float16", "bfloat16")
    }


def test_autotune_keys_the_lesson_and_the_op_name():
    assert ex.matmul_kernel.keys == ["M", "N", "K"]  # the lesson's: bare
    # TF32 and exact float32 tuned apart (test_fused_kernel_tunes_tf32_apart_..._on_gpu)
    assert fu.fused_matmul_kernel.keys == ["M", "N", "K", "INPUT_PRECISION"]
    assert op.bucketed_matmul_kernel.keys == [
        "M_BUCKET", "N", "K_BUCKET", "stride_ak", "stride_bn", "INPUT_PRECISION"
    ]  # fmt: skip


@pytest.mark.parametrize("dtype, m", [("float16", 256), ("float32", 64)])
def test_benchmark_rows(dtype, m):
    with support.float32_matmul_precision("high"):
        rows = pe.benchmark(m, 32, 16, dtype)
    names = [row["variant"] for row in rows]
    assert names == [*VARIANT_NAMES, "matmul_kernel[grid] bare", "tuned, row-major order", "torch"]
    for row in rows:
        assert set(row) == set(common.TIMING_COLUMNS) and row["unit"] == "TFLOP/s"
        assert (row["host us"] is None) == common.INTERPRETED


@support.gpu_only
@pytest.mark.parametrize("dtype, precision", DTYPE_PRECISIONS)
def test_large_on_gpu(dtype, precision):
    # Bounds without a TF32 term under "highest" for the op: fails if a kernel used TF32 there.
    assert check_every_variant(4096, 4096, 4096, dtype, precision) == expected_variants(
        4096, 4096, dtype
    )
    assert check_every_variant(3001, 1001, 5000, dtype, precision) == expected_variants(
        1001, 5000, dtype
    )


@support.gpu_only
def test_fused_kernel_tunes_tf32_apart_from_exact_float32_on_gpu():
    # Tuned for exact float32 first, a pick that TF32 ran with took 288 KB of shared memory
    # (the H200 has 227 KB) and failed to launch: INPUT_PRECISION is in the tuning key.
    a, b = torch.randn(3001, 5000, device=DEVICE), torch.randn(5000, 1001, device=DEVICE)
    for precision in ("highest", "high"):
        with support.float32_matmul_precision(precision):
            with common.uninitialized_memory_is_nan():
                c = fu.matmul_fused(a, b)
            tf32 = common.TF32_ROUNDOFF if precision == "high" else 0.0
            common.assert_close(c, *reference64(a, b), 5000, precision, tf32)


def assert_first_and_last_rows(a, b, c, name):
    """Check the first and last 64 rows of c = a @ b, where 64-bit offsets matter most."""
    m = a.shape[0]
    for rows in (slice(0, 64), slice(m - 64, m)):
        expected = a[rows].double() @ b.double()
        magnitude = a[rows].double().abs() @ b.double().abs()
        common.assert_close(c[rows], expected, magnitude, a.shape[1], f"{name} rows {rows}")


@support.gpu_only
@pytest.mark.parametrize("name", ["fused", "persistent", "matmul"])
def test_offsets_past_2_to_31_on_gpu(name):
    # A with 2**31 + 2**13 elements: row * stride passes 2**31 in the last rows.
    fn = op.matmul if name == "matmul" else WRAPPERS[name]
    m, k, n = 2**18 + 1, 2**13, 16
    a = torch.randn(m, k, device=DEVICE, dtype=torch.float16)
    b = torch.randn(k, n, device=DEVICE, dtype=torch.float16)
    with common.uninitialized_memory_is_nan():
        c = fn(a, b)
    assert_first_and_last_rows(a, b, c, name)
    if name == "fused":
        for refuses in (ex.matmul_simple, ex.matmul_tuned):  # int32 offsets: main.py's refuse
            with pytest.raises(AssertionError):
                refuses(a, b)


@support.gpu_only
@pytest.mark.parametrize("name", ["fused", "matmul"])
def test_transposed_stride_past_2_to_31_on_gpu(name):
    # A transposed view with 2**25 + 17 rows: BLOCK_K * stride_ak passes 2**31.
    fn = op.matmul if name == "matmul" else WRAPPERS[name]
    m, k, n = 2**25 + 17, 64, 16
    a = torch.randn(k, m, device=DEVICE, dtype=torch.float16).T
    b = torch.randn(k, n, device=DEVICE, dtype=torch.float16)
    with common.uninitialized_memory_is_nan():
        c = fn(a, b)
    assert_first_and_last_rows(a, b, c, name)


# ---- op.py: dispatch ----


def spy_on_pick(monkeypatch):
    """A list of the kernels op.launch picks, one a layout (it plans each layout once: no plans
    are kept before). torch.compile's caches are off: a graph that another test compiled (on
    the GPU, in another process too) came from them without tracing the op's body, and no pick."""
    picks, real = [], op.pick
    spy = lambda a, b, c: picks.append(real(a, b, c)) or picks[-1]  # noqa: E731
    monkeypatch.setattr(op, "pick", spy)
    monkeypatch.setattr(op, "PLANS", {})
    monkeypatch.setattr(torch.compiler.config, "force_disable_caches", True)
    return picks


def test_stream_k_schedule_prints_the_worked_example():
    # The docstring's worked example is schedule()'s text; every iteration is in one run.
    for programs in (3, 5):
        assert sk.schedule(2, 4, programs) in sk.__doc__.replace("\n    ", "\n")
    # and its line of iterations, each under the program whose run holds it
    holder = [str(p) for p, (start, end) in enumerate(sk.runs(8, 3)) for _ in range(start, end)]
    assert f"program    {' '.join(holder[:4])} | {' '.join(holder[4:])}" in sk.__doc__
    text = sk.schedule(5, 7, 4)
    steps = [range(int(a), int(b) + 1) for a, b in re.findall(r"steps (\d+) to (\d+)", text)]
    assert sum(len(r) for r in steps) == 5 * 7 and text.count("(owner)") == 5


@pytest.mark.parametrize(
    "m, n, k, programs, block, block_k",
    [(2, 4, 8, 3, 2, 2), (2, 4, 8, 5, 2, 2), (5, 7, 9, 4, 2, 2), (17, 3, 33, 7, 4, 5),
     (1, 1, 1, 3, 2, 2), (6, 6, 40, 2, 3, 4), (9, 10, 11, 1, 4, 3), (4, 4, 4, 64, 2, 2)],
)  # fmt: skip
def test_stream_k_in_torch_is_a_matmul(m, n, k, programs, block, block_k):
    # The plain PyTorch version of the kernel: tiles split two and three ways, ragged edges,
    # one program, programs with no iteration; against float64 with fresh random inputs.
    a = torch.randn(m, k, dtype=torch.float64)
    b = torch.randn(k, n, dtype=torch.float64)
    c = sk.stream_k_in_torch(a, b, programs, block, block_k)
    torch.testing.assert_close(c, a @ b, rtol=1e-12, atol=1e-12)


def test_stream_k_runs_cover_every_iteration_once():
    for iterations, programs in [(8, 3), (8, 5), (3, 7), (132 * 128 + 5, 132), (0, 4)]:
        spans = sk.runs(iterations, programs)
        assert len(spans) == programs and spans[0][0] == 0 and spans[-1][1] == iterations
        assert all(end - start in (iterations // programs, iterations // programs + 1)
                   for start, end in spans)  # fmt: skip
        assert all(spans[p][1] == spans[p + 1][0] for p in range(programs - 1))


@pytest.mark.parametrize("kernel", [pe.persistent_matmul_kernel.fn, sk.stream_k_kernel])
def test_kernels_op_picks_by_size_reuse_their_compile_at_a_new_size(kernel):
    # A new token count moves M (or K, in a weight gradient) and a stride; Triton would compile
    # again where an int turns 1, a multiple of 16 or neither (results/NOTES.md item 168).
    if hasattr(kernel, "params"):  # a JITFunction
        names = {param.name for param in kernel.params if param.do_not_specialize}
    else:  # under the interpreter, @triton.jit's arguments as given
        names = set(kernel.kwargs["do_not_specialize"])
    assert names == {"M", "N", "K", "stride_a", "stride_b", "stride_cm"}


def test_stream_k_rule():
    # Stream-K where the persistent kernel's turns are mostly idle and K has steps to spread,
    # on 132 SMs: d = 768's weight gradients (72 wide tiles, 55% busy), not d = 1024's (97%),
    # nor a tall product whose narrow tiles fill 98% of their turns, nor a short K.
    assert op.stream_k_pays(768, 3072, 8192, 132) and op.stream_k_pays(3072, 768, 6000, 132)
    assert not op.stream_k_pays(1024, 4096, 8192, 132)
    assert not op.stream_k_pays(6400, 1600, 6000, 132)
    assert not op.stream_k_pays(768, 3072, 512, 132)


@pytest.mark.parametrize("transpose_a, transpose_b", LAYOUTS)
def test_matmul_runs_stream_k_where_it_pays(monkeypatch, transpose_a, transpose_b):
    # On the interpreter's 3 "SMs", 256 x 256 makes 2 wide or 4 narrow tiles: 67% busy, and K =
    # 1024 has 16 steps: stream-K, with a bias, every layout; P kept for a backward, the
    # persistent kernel (pick names stream_k, but stream_k.py keeps no P); float32 (TF32) and a
    # short K, persistent.
    picks = spy_on_pick(monkeypatch)
    half = torch.float16
    a = common.random_matrix(256, 1024, half, transpose_a)
    b = common.random_matrix(1024, 256, half, transpose_b)
    bias = torch.randn(256, device=DEVICE, dtype=half)
    op.KEPT_FLAGS.clear()
    for _ in range(2):  # the second call runs the first's plan, and the first's flags
        with common.uninitialized_memory_is_nan():
            c = op.matmul(a, b, bias=bias)
        want, scale = reference64(a, b)
        common.assert_close(c, want + bias.double(), scale + bias.double().abs(), 1024, "c")
    # One set of flags, for this stream, which the kernel set back to 0 after each call
    (flags,) = op.KEPT_FLAGS.values()
    assert flags.dtype == torch.int32 and not flags.any()
    with common.uninitialized_memory_is_nan():
        c, pre = op.forward(a, b, bias, "gelu_tanh", keep_pre=True)
    common.assert_close(pre, want + bias.double(), scale + bias.double().abs(), 1024, "P")
    with support.float32_matmul_precision("high"):
        op.matmul(a.float(), b.float())
    op.matmul(a[:, :512], b[:512])
    assert picks == ["stream_k", "stream_k", "persistent", "persistent"]


@support.gpu_only
def test_matmul_keeps_stream_k_flags_per_stream_but_not_in_a_cuda_graph_on_gpu():
    # Calls on one stream run in turn, so they share flags; another stream gets its own. A
    # graph's capture makes new ones: its fill of zeros runs only at a replay. d = 768's weight
    # gradient at 1024 tokens, which op.pick runs by stream-K on an H100 or H200.
    a = common.random_matrix(768, 1024, torch.bfloat16, transposed=True)
    b = common.random_matrix(1024, 3072, torch.bfloat16)
    if op.pick(a, b, a.new_empty(768, 3072)) != "stream_k":
        pytest.skip("this GPU runs the product without stream-K")
    op.KEPT_FLAGS.clear()
    first = op.matmul(a, b)
    common.assert_close(first, *reference64(a, b), 1024, "stream-K, flags kept")
    assert torch.equal(op.matmul(a, b), first) and len(op.KEPT_FLAGS) == 1
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        on_side = op.matmul(a, b)
    torch.cuda.current_stream().wait_stream(side)
    assert torch.equal(on_side, first) and len(op.KEPT_FLAGS) == 2
    kept = dict(op.KEPT_FLAGS)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        replayed = op.matmul(a, b)
    assert op.KEPT_FLAGS.keys() == kept.keys()  # no flags kept for the capture's stream
    assert all(op.KEPT_FLAGS[key] is flags for key, flags in kept.items())
    for _ in range(2):
        replayed.zero_()
        graph.replay()
        assert torch.equal(replayed, first)
    assert torch.equal(op.matmul(a, b), first)
    assert not any(flags.any() for flags in op.KEPT_FLAGS.values())


def test_the_registered_op_runs_stream_k(monkeypatch):
    picks = spy_on_pick(monkeypatch)
    a = common.random_matrix(256, 1024, torch.bfloat16)
    b = common.random_matrix(1024, 256, torch.bfloat16)
    c = torch.ops.triton_lessons.matmul(a, b)
    common.assert_close(c, *reference64(a, b), 1024, "the op, by stream-K")
    assert picks == ["stream_k"]


def test_matmul_takes_the_persistent_kernel_when_it_can(monkeypatch):
    picks = spy_on_pick(monkeypatch)
    half = dict(device=DEVICE, dtype=torch.float16)
    a = torch.randn(BIG, 32, **half)
    op.matmul(a, torch.randn(32, BIG, **half))
    op.matmul(a, torch.randn(BIG, 32, **half).T)  # transposed B
    op.matmul(a.T.contiguous().T, torch.randn(32, 8, **half))
    assert picks == ["persistent"] * 3
    op.matmul(a, torch.randn(32, BIG + 4, **half))  # rows of 8 bytes past 16s
    op.matmul(a[:128], torch.randn(32, BIG, **half))  # 128 rows: the fused kernel
    with support.float32_matmul_precision("highest"):
        op.matmul(a.float(), torch.randn(32, BIG, device=DEVICE))  # exact float32: fused
    op.matmul(a.double(), torch.randn(32, BIG, device=DEVICE, dtype=torch.float64))
    assert picks == ["persistent"] * 3 + ["fused"] * 4
    with support.float32_matmul_precision("high"):  # TF32 copies an operand if need be
        op.matmul(a.float()[:, :17], torch.randn(17, BIG, device=DEVICE))
    assert picks[-1] == "persistent"


def test_pick_names_the_kernel_matmul_runs():
    a = torch.randn(BIG, 32, device=DEVICE, dtype=torch.float16)
    b = torch.randn(32, BIG, device=DEVICE, dtype=torch.float16)
    c = a.new_empty((BIG, BIG))
    assert op.pick(a, b, c) == "persistent"
    assert op.pick(a.T.contiguous().T, b.T.contiguous().T, c) == "persistent"  # both transposed
    assert op.pick(a[:128], b, c[:128]) == "fused"  # one row of 128-row tiles
    assert op.pick(a.double(), b.double(), c.double()) == "fused"  # no fast dot for float64


def test_bfloat16_rows_off_16_bytes_run_the_fused_kernel_with_tf32_on(monkeypatch):
    # A's rows of 17 bfloat16 (34 bytes) cannot be read by a descriptor: the fused kernel runs.
    # (Under the interpreter, launch() hands the kernels float32 copies of bfloat16 inputs,
    # which TF32 would copy again: the pick reads the inputs as given, as on a GPU.)
    picks = spy_on_pick(monkeypatch)
    bf16 = dict(device=DEVICE, dtype=torch.bfloat16)
    a, b = torch.randn(BIG, 17, **bf16), torch.randn(17, 64, **bf16)
    with support.float32_matmul_precision("high"):
        for fn in (op.matmul, torch.ops.triton_lessons.matmul):
            with common.uninitialized_memory_is_nan():
                c = fn(a, b)
            common.assert_close(c, *reference64(a, b), 17, f"{fn}")
    assert picks == ["fused", "fused"]


def test_an_address_off_16_bytes_is_planned_again(monkeypatch):
    # launch() keeps a plan per layout: the same shape and strides at an address that is not
    # 16-byte aligned are a new layout, which a descriptor cannot read.
    picks = spy_on_pick(monkeypatch)
    buffer = torch.randn(BIG * 32 + 1, device=DEVICE, dtype=torch.float16)
    b = torch.randn(32, BIG, device=DEVICE, dtype=torch.float16)
    for start in (0, 1, 0, 1):
        buffer.normal_()
        a = buffer[start : start + BIG * 32].view(BIG, 32)
        c = op.matmul(a, b)
        common.assert_close(
            c, a.double() @ b.double(), a.double().abs() @ b.double().abs(), 32, "c"
        )
    assert picks == ["persistent", "fused"] and len(op.PLANS) == 2


def test_matmul_validates_once_a_layout(monkeypatch):
    # forward()'s plan checks its layouts once: later calls with new tensors of the same
    # layouts skip validate(); another layout (bias, activation, a's strides) checks again.
    checked, real = [], op.validate
    monkeypatch.setattr(op, "validate", lambda *args: checked.append(args) or real(*args))
    monkeypatch.setattr(op, "FORWARD_PLANS", {})
    a, b, bias = epilogue_inputs(40, 24, 32, torch.float32)
    for _ in range(3):
        a.normal_()
        with common.uninitialized_memory_is_nan():
            c = op.matmul(a, b)
        common.assert_close(c, *reference64(a, b), 32, "c")
    assert len(checked) == 1
    op.matmul(a, b, bias)
    op.matmul(a, b, bias, "gelu_tanh")
    op.matmul(a.T.contiguous().T, b)
    assert len(checked) == 4


@pytest.mark.parametrize("kernel", ["persistent", "fused"])
def test_a_plan_launches_new_tensors_of_its_layout(monkeypatch, kernel):
    # The second call of a layout runs the first's plan with its own tensors: new values, a new
    # bias (P kept for the backward too); a bias 2 bytes off 16 is another layout.
    picks = spy_on_pick(monkeypatch)
    half = dict(device=DEVICE, dtype=torch.float16)
    rows = BIG if kernel == "persistent" else 40
    bias_buffer = torch.empty(BIG + 1, **half)
    for start in (0, 0, 1):
        a, b = torch.randn(rows, 32, **half), torch.randn(BIG, 32, **half).T
        bias = bias_buffer[start : start + BIG].normal_()
        with common.uninitialized_memory_is_nan():
            c, pre = op.forward(a, b, bias, "gelu_tanh", keep_pre=True)
        want, scale = reference64(a, b)
        want, scale = want + bias.double(), scale + bias.double().abs()
        common.assert_close(pre, want, scale, 32, f"P, bias at {start}")
        # C: P's GELU, one more rounding to float16
        rounded = epilogue_tolerance(torch.float16)
        common.assert_close(c, gelu64(want), 1.2 * scale, 32, f"C, bias at {start}", rounded)
    assert picks == [kernel, kernel] and len(op.PLANS) == 2


def test_first_persistent_launch_of_a_kind_compiles_both_tile_widths(monkeypatch):
    # The width rule reads M, so a new token count may switch widths: the first launch of each
    # kind of product compiles both, with each width's rules (warmup() compiles, runs nothing),
    # and a new M of that kind compiles nothing more.
    warmed = []
    kernel = pe.persistent_matmul_kernel.fn
    monkeypatch.setattr(op, "COMPILED_BOTH_WIDTHS", set())
    monkeypatch.setattr(op, "PLANS", {})
    monkeypatch.setattr(kernel, "warmup", lambda grid, **config: warmed.append(config))
    b = torch.randn(32, BIG, device=DEVICE, dtype=torch.float16)
    for m in (BIG, 3 * BIG, 2 * BIG):
        op.matmul(torch.randn(m, 32, device=DEVICE, dtype=torch.float16), b)
    expected = [
        dict(BLOCK_N=128, num_warps=4, num_stages=5, STORE_HALVES=False, A_TRANSPOSED=False),
        dict(BLOCK_N=256, num_warps=8, num_stages=3, STORE_HALVES=False, A_TRANSPOSED=False),
    ]
    assert [{name: config[name] for name in expected[0]} for config in warmed] == expected
    op.matmul(torch.randn(32, BIG, device=DEVICE, dtype=torch.float16).T, b)  # a new kind
    assert len(warmed) == 4 and warmed[-1]["A_TRANSPOSED"] is True


class FakeCompiled:  # what warmup() returns: a compiled kernel, indexed by a grid to load it
    def __init__(self, loads):
        self.loads = loads

    def __getitem__(self, grid):
        self.loads.append(grid)
        return lambda *args: pytest.fail("loaded() launched a kernel")


class FakeFuture:  # a compile Triton runs asynchronously
    def __init__(self, compiled):
        self.compiled = compiled

    def result(self):
        return self.compiled


def test_first_fused_launch_of_a_kind_compiles_its_pick_for_every_class(monkeypatch):
    # Triton compiles again for an int that is 1, a multiple of 16 or neither: the first launch
    # of a kind compiles the pick with M in (1, 16, 17) and K in (16, 17), the rest nothing more.
    # Each is loaded too (its launcher built, as at a first launch: a C compile for M = 1), and
    # none is launched; a compile Triton runs asynchronously is waited for.
    warmed, loads = [], []

    def warmup(*args, grid, **config):
        warmed.append(args)
        compiled = FakeCompiled(loads)
        return FakeFuture(compiled) if len(warmed) % 2 else compiled

    monkeypatch.setattr(op, "COMPILED_EVERY_CLASS", set())
    monkeypatch.setattr(op, "PLANS", {})
    monkeypatch.setattr(op.bucketed_matmul_kernel.fn, "warmup", warmup)
    b = torch.randn(40, 24, device=DEVICE)  # float32, "highest": the fused kernel
    with support.float32_matmul_precision("highest"):
        for m in (300, 301, 316):  # one bucket of M, every M over SMALL_M
            c = op.matmul(a := torch.randn(m, 40, device=DEVICE), b)
            common.assert_close(c, *reference64(a, b), 40, f"fused m={m}")
    assert [(args[4], args[6]) for args in warmed] == [
        (m, k) for m in (1, 16, 17) for k in (16, 17)
    ]
    assert all(args[5] == 24 and args[-2:] == (op.LARGE_M, op.EVERY_K) for args in warmed)
    assert loads == [(1, 1, 1)] * 6


def test_a_kinds_first_launch_tunes_its_bucket_at_the_buckets_m(monkeypatch):
    # Every M up to SMALL_M shares one pick of the fused kernel, every larger M another, each
    # tuned on scratch rows (SMALL_M, LARGE_M) before the first launch of a kind whose M is less
    # (at the first M that came, the pick would depend on it). The next M of the kind tunes
    # nothing; an A without rows of K (stride_ak, a key) is left be.
    tuned = []
    real = op.tune_bucket
    monkeypatch.setattr(op, "COMPILED_EVERY_CLASS", set())
    monkeypatch.setattr(op, "PLANS", {})
    monkeypatch.setattr(op, "tune_bucket", lambda *args: tuned.append(args) or real(*args))
    b = torch.randn(40, 24, device=DEVICE)  # float32, "highest": the fused kernel
    with support.float32_matmul_precision("highest"):
        for m in (1, 17, 100, 128, 129, 300, 1024, 2000):
            c = op.matmul(a := torch.randn(m, 40, device=DEVICE), b)
            common.assert_close(c, *reference64(a, b), 40, f"fused m={m}")
        a = torch.randn(40, 5, device=DEVICE).T  # stride_ak 5
        common.assert_close(op.matmul(a, b), *reference64(a, b), 40, "fused, A transposed")
    assert [tuple(args[0].shape) for args in tuned] == [(1, 40), (129, 40)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float64])
def test_buckets_of_m_and_k(dtype):
    # Two buckets of M, so a new token count (M of x @ W) tunes nothing new; K by powers of 2,
    # but in exact float32 and float64 one bucket, so a weight gradient's K (its token count)
    # neither.
    def buckets(m, k, precision="ieee"):
        return op.buckets_of(m, k, dtype, precision)

    exact = dtype in (torch.float32, torch.float64)
    assert buckets(1, 1) == (op.SMALL_M, op.EVERY_K if exact else 1)
    assert buckets(op.SMALL_M, 40) == (op.SMALL_M, op.EVERY_K if exact else 64)
    for tokens in (op.SMALL_M + 1, 1025, 6001, 8192, 32768):
        assert buckets(tokens, 768) == (op.LARGE_M, op.EVERY_K if exact else 1024)
    for tokens in (300, 1000, 6001, 32768):  # a weight gradient: K the token count
        k_bucket = op.EVERY_K if exact else 1 << (tokens - 1).bit_length()
        assert buckets(768, tokens) == (op.LARGE_M, k_bucket)
    if dtype == torch.float32:
        assert buckets(768, 6001, "tf32")[1] == 8192  # TF32 keeps K's powers of 2


@pytest.mark.parametrize("dtype, precision", DTYPE_PRECISIONS)
def test_only_exact_float32_and_float64_tune_small_tiles_alone(dtype, precision):
    # The fused kernel's prune: 16-bit dots pass INPUT_PRECISION "ieee" too, and keep every tile
    # (128-row tiles won their large products); exact float32 and float64 time only small ones.
    tiles = [(128, 256), (256, 128), (64, 64), (16, 64)]
    configs = [ex.triton.Config(dict(BLOCK_M=m, BLOCK_N=n)) for m, n in tiles]
    with support.float32_matmul_precision(precision):
        precision_of_dot = fu.input_precision(dtype)
    a = torch.empty((2, 2), dtype=dtype)
    kept = op.exact_tiles(configs, {"a_ptr": a}, INPUT_PRECISION=precision_of_dot)
    exact = dtype in (torch.float32, torch.float64) and precision != "high"
    assert kept == (configs[2:] if exact else configs)


def test_column_major_out_is_written_where_it_lies(monkeypatch):
    # An out= that is a transposed view: a descriptor writes C row by row, so matmul runs the
    # fused kernel, which writes through any strides.
    picks = spy_on_pick(monkeypatch)
    a = torch.randn(BIG, 32, device=DEVICE, dtype=torch.float16)
    b = torch.randn(32, BIG, device=DEVICE, dtype=torch.float16)
    out = torch.full((BIG, BIG), float("nan"), device=DEVICE, dtype=torch.float16).T
    assert re.search(
        r"the output \(256, 256\) strides \(1, 256\)", pe.persistent_problem(a, b, out)
    )
    assert op.matmul(a, b, out=out) is out and picks == ["fused"]
    common.assert_close(out, *reference64(a, b), 32, "matmul into a column-major out")


# ---- op.py: gradients ----


def grad_inputs(m, n, k, dtype, transposed=False):
    """a (m, k) and b (k, n) leaves that require grad (b a transposed view when asked), and dC."""
    a = torch.randn(m, k, device=DEVICE).to(dtype).requires_grad_()
    b = torch.randn(n, k, device=DEVICE).T if transposed else torch.randn(k, n, device=DEVICE)
    b = b.to(dtype).detach().requires_grad_()
    return a, b, torch.randn(m, n, device=DEVICE).to(dtype)


def reference64(a, b):
    """a @ b and |a| @ |b| in float64, for common.assert_close."""
    a, b = a.detach().double(), b.detach().double()
    return a @ b, a.abs() @ b.abs()


def assert_gradients_match(a, b, grad_c, what):
    """a.grad and b.grad against dA = dC @ B^T and dB = A^T @ dC in float64."""
    g, a64, b64 = grad_c.double(), a.detach().double(), b.detach().double()
    error = roundoff(a.dtype)
    common.assert_close(a.grad, g @ b64.T, g.abs() @ b64.abs().T, g.shape[1], f"{what}: dA", error)
    common.assert_close(b.grad, a64.T @ g, a64.abs().T @ g.abs(), g.shape[0], f"{what}: dB", error)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("entry", ["matmul", "op"])
def test_gradcheck_and_second_derivatives_float64(transposed, entry):
    fn = op.matmul if entry == "matmul" else torch.ops.triton_lessons.matmul
    a, b, _ = grad_inputs(5, 3, 4, torch.float64, transposed)
    assert torch.autograd.gradcheck(fn, (a, b))
    assert torch.autograd.gradgradcheck(fn, (a, b))


@pytest.mark.parametrize("dtype, precision", DTYPE_PRECISIONS[:4])
@pytest.mark.parametrize(
    "m, n, k, transposed",
    [(40, 24, 32, False), (33, 17, 65, False), (40, 24, 32, True), (BIG, BIG, 32, False)],
)
def test_gradients_match_float64(dtype, precision, m, n, k, transposed):
    # (BIG, BIG, 32): 16-byte rows and M > 128, so 16-bit and TF32 forwards run the persistent
    # kernel, and so do their gradients, on transposed views.
    with support.float32_matmul_precision(precision):
        a, b, grad_c = grad_inputs(m, n, k, dtype, transposed)
        c = op.matmul(a, b)
        assert c.requires_grad and c.dtype == dtype
        c.backward(grad_c)
        assert_gradients_match(a, b, grad_c, f"{m}x{n}x{k} {dtype} {precision}")


@pytest.mark.parametrize("dtype, precision", [(torch.bfloat16, None), (torch.float32, "high")])
def test_gradients_run_the_persistent_kernel_on_transposed_views(monkeypatch, dtype, precision):
    # dA = dC @ B^T reads B^T where it lies, dB = A^T @ dC reads A^T (TF32 copies it): all three
    # products of a step run on the persistent kernel.
    picks = spy_on_pick(monkeypatch)
    with support.float32_matmul_precision(precision):
        a, b, grad_c = grad_inputs(BIG, BIG, BIG, dtype)
        op.matmul(a, b).backward(grad_c)
        assert_gradients_match(a, b, grad_c, f"persistent gradients {dtype}")
    assert picks == ["persistent"] * 3


@pytest.mark.parametrize("dtype, precision", [(torch.float32, "high"), (torch.float16, None)])
@pytest.mark.parametrize("entry", ["matmul", "Matmul", "tuned", "fused", "persistent"])
def test_gradients_of_a_sum(dtype, precision, entry):
    # dC of c.sum() is an expand()ed view with strides (0, 0); of (c.sum(0) * w).sum(), (0, 1).
    # op.py's matmul and the lesson's Function get it from autograd; a wrapper, in the backward's
    # two products, dC @ B^T and A^T @ dC.
    w = torch.randn(16, device=DEVICE).to(dtype)
    with support.float32_matmul_precision(precision):
        for loss, grad_c in [
            (lambda c: c.sum(), torch.ones((), device=DEVICE, dtype=dtype).expand(32, 16)),
            (lambda c: (c.sum(0) * w).sum(), w.expand(32, 16)),
        ]:
            a, b, _ = grad_inputs(32, 16, 24, dtype)
            if entry in ("matmul", "Matmul"):
                loss((op.matmul if entry == "matmul" else ex.Matmul.apply)(a, b)).backward()
            else:
                fn, a_, b_ = WRAPPERS[entry], a.detach(), b.detach()
                a.grad, b.grad = fn(grad_c, b_.T), fn(a_.T, grad_c)
            assert_gradients_match(a, b, grad_c, f"{entry}: sum {dtype}")


def test_only_the_inputs_that_require_grad_get_one():
    a = torch.randn(6, 4, device=DEVICE, requires_grad=True)
    b = torch.randn(4, 5, device=DEVICE)
    op.matmul(a, b).sum().backward()
    assert a.grad is not None and b.grad is None
    with torch.no_grad():
        assert not op.matmul(a, b).requires_grad


# ---- op.py: out= ----


@pytest.mark.parametrize("which", ["a", "b", "a view of b"])
def test_out_may_overlap_an_input(which):
    # 128 x 128 float32: several C tiles, so a kernel writing into A or B would corrupt what other
    # programs still read; rows of 512 bytes, so the persistent kernel takes it too.
    a = torch.randn(128, 128, device=DEVICE)
    big_b = torch.randn(128, 256, device=DEVICE)
    b = big_b[:, :128]
    expected, magnitude = reference64(a, b)
    out = {"a": a, "b": b, "a view of b": big_b[:, 64:192]}[which]
    assert op.matmul(a, b, out=out) is out
    common.assert_close(out, expected, magnitude, 128, f"out = {which}", roundoff(a.dtype))


def test_out_with_stride_0_is_refused():
    a, b = torch.randn(8, 16, device=DEVICE), torch.randn(16, 16, device=DEVICE)
    with pytest.raises(ValueError, match=r"strides \(0, 1\).*share one memory location"):
        op.matmul(a, b, out=torch.empty(1, 16, device=DEVICE).expand(8, 16))


def test_out_with_inputs_that_require_grad_is_refused():
    a = torch.randn(8, 16, device=DEVICE, requires_grad=True)
    out = torch.empty(8, 16, device=DEVICE)
    with pytest.raises(ValueError, match="out= is not differentiable"):
        op.matmul(a, torch.randn(16, 16, device=DEVICE), out=out)


@pytest.mark.parametrize("overlapping", [False, True])
def test_out_bumps_its_version_so_a_backward_that_saved_it_raises(overlapping):
    a = torch.randn(3, 3, device=DEVICE)
    out = a if overlapping else torch.zeros(3, 3, device=DEVICE)
    w = torch.ones(3, 3, device=DEVICE, requires_grad=True)
    z = (w * out).sum()  # saves out for the backward
    version = out._version
    op.matmul(a, torch.randn(3, 3, device=DEVICE), out=out)
    assert out._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_out_that_requires_grad_is_refused():
    out = torch.zeros(3, 2, device=DEVICE, requires_grad=True)
    a, b = torch.ones(3, 4, device=DEVICE), torch.ones(4, 2, device=DEVICE)
    with pytest.raises(ValueError, match="out requires grad"):
        op.matmul(a, b, out=out)
    with torch.no_grad():
        op.matmul(a, b, out=out)
    assert torch.equal(out.detach(), torch.full((3, 2), 4.0, device=DEVICE))


# ---- op.py: bad input through the entry and every registered op ----


ENTRIES = ["matmul", "op matmul", "op matmul_with_pre"]


def entry_fn(entry):
    """A function (a, b, bias=None, activation=None) calling matmul by `entry`: the entry, or
    one of the registered ops ("op <name>")."""
    if entry == "matmul":
        return op.matmul  # (it takes the registered op's arguments, in their order)
    registered = getattr(torch.ops.triton_lessons, entry.removeprefix("op "))
    return lambda a, b, bias=None, activation=None: registered(a, b, bias, activation)


@pytest.mark.parametrize(
    "entry, fake", [(e, False) for e in ENTRIES] + [(e, True) for e in ENTRIES[1:]]
)  # each op's fake too (the entry has none)
def test_bad_input_through_the_entry_and_each_op_alike(entry, fake):
    fn = entry_fn(entry)
    mode = torch._subclasses.fake_tensor.FakeTensorMode(allow_non_fake_inputs=True)
    with mode if fake else torch.no_grad():
        a, b = torch.randn(4, 6, device=DEVICE), torch.randn(6, 5, device=DEVICE)
        bias = torch.randn(5, device=DEVICE)
        for _ in range(2):  # a layout that fails validation keeps no plan: refused again
            with pytest.raises(TypeError, match="dtype torch.int32"):
                fn(a.int(), b)
            with pytest.raises(TypeError, match="a torch.float32, b torch.float16"):
                fn(a, b.half())
            with pytest.raises(ValueError, match=r"b must be 2-D, got shape \(6,\)"):
                fn(a, b[:, 0])
            with pytest.raises(ValueError, match=r"a \(4, 6\) and b \(5, 6\) do not chain: 6 != 5"):
                fn(a, b.T)
            with pytest.raises(ValueError, match=r"bias has shape \(4,\), expected \(5,\)"):
                fn(a, b, bias=bias[:4])
            with pytest.raises(ValueError, match=r"bias must be 1-D, got shape \(1, 5\)"):
                fn(a, b, bias=bias[None])
            with pytest.raises(TypeError, match="bias torch.float64"):
                fn(a, b, bias=bias.double())
            with pytest.raises(ValueError, match="activation must be one of"):
                fn(a, b, activation="gelu")
    if not fake:
        with pytest.raises(ValueError, match="is on meta"):
            fn(a, torch.randn(6, 5, device="meta"))


def test_a_negated_view_is_refused_by_the_entry_and_resolved_by_the_op():
    # The imaginary part of a conjugate holds its memory's values with the signs flipped
    # (is_neg()): a kernel would read the memory. The entry names it (a, bias, out); the
    # registered op gets it resolved by PyTorch's dispatcher, and is right.
    a, b = (
        torch.randn(4, 6, dtype=torch.cfloat, device=DEVICE).conj().imag,
        torch.randn(6, 5, device=DEVICE),
    )
    for _ in range(2):  # a layout refused keeps no plan
        with pytest.raises(ValueError, match=r"a is a negated view \(is_neg\(\)\)"):
            op.matmul(a, b)
    with pytest.raises(ValueError, match="bias is a negated view"):
        op.matmul(
            a.resolve_neg(), b, bias=torch.randn(5, dtype=torch.cfloat, device=DEVICE).conj().imag
        )
    with pytest.raises(ValueError, match="out is a negated view"):
        op.matmul(
            a.resolve_neg(), b, out=torch.randn(4, 5, dtype=torch.cfloat, device=DEVICE).conj().imag
        )
    common.assert_close(
        torch.ops.triton_lessons.matmul(a, b), *reference64(a.resolve_neg(), b), 6, "op"
    )


def test_bad_input_to_the_entry():
    a, b = torch.randn(4, 6, device=DEVICE), torch.randn(6, 5, device=DEVICE)
    with pytest.raises(TypeError, match="a must be a tensor of .*, got list"):
        op.matmul([[1.0]], b)
    with pytest.raises(TypeError, match="bias must be a tensor of .*, got list"):
        op.matmul(a, b, bias=[0.0] * 5)
    with pytest.raises(ValueError, match="activation must be one of"):
        op.matmul(a, b, activation=["gelu_tanh"])  # (no dict could key it)
    with pytest.raises(ValueError, match=r"a must be 2-D, got shape \(2, 4, 6\)"):
        op.matmul(torch.randn(2, 4, 6, device=DEVICE), b)
    with pytest.raises(ValueError, match=r"out is \(5, 4\).*expected \(4, 5\)"):
        op.matmul(a, b, out=torch.empty(5, 4, device=DEVICE))
    with pytest.raises(ValueError, match="out is .* torch.float16.*expected .*torch.float32"):
        op.matmul(a, b, out=torch.empty(4, 5, device=DEVICE, dtype=torch.float16))
    with pytest.raises(TypeError, match="out must be a torch.Tensor"):
        op.matmul(a, b, out=[0.0])


# ---- op.py: the fused epilogue, bias and GELU (tanh form) ----


def gelu64(p):
    return torch.nn.functional.gelu(p, approximate="tanh")


def epilogue_inputs(m, n, k, dtype, transposed=False, grad=False):
    a = common.random_matrix(m, k, dtype, transposed)
    b = common.random_matrix(k, n, dtype, transposed)
    bias = torch.randn(n, device=DEVICE).to(dtype)
    return [t.detach().requires_grad_(grad) for t in (a, b, bias)]


def epilogue_tolerance(dtype):
    # One more rounding to the dtype (16 bits: 2^-8 or finer), of a value the gradient test
    # derives from a rounded one (dP, from P).
    return 2.0**-8 if dtype in (torch.float16, torch.bfloat16) else roundoff(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("m, n, k", [(17, 24, 40), (BIG, 64, 32)])
def test_bias_and_gelu_every_kernel(dtype, transposed, m, n, k):
    a, b, bias = epilogue_inputs(m, n, k, dtype, transposed)
    p64 = a.double() @ b.double() + bias.double()
    magnitude = 1.2 * (a.double().abs() @ b.double().abs() + bias.double().abs())
    kernels = {n_: WRAPPERS[n_] for n_ in pe.variants_for(a, b) if n_ in ("fused", "persistent")}
    kernels["matmul"] = lambda a, b, bias, activation: op.matmul(  # noqa: E731
        a, b, bias=bias, activation=activation
    )
    for name, fn in kernels.items():
        for activation, expected in ((None, p64), ("gelu_tanh", gelu64(p64))):
            with common.uninitialized_memory_is_nan():
                out = fn(a, b, bias, activation)
            what = f"{name} {activation} {dtype} {m}x{n}x{k}"
            common.assert_close(out, expected, magnitude, k, what, roundoff(dtype))


@pytest.mark.parametrize("kernel", ["fused", "persistent"])
def test_the_kept_pre_activation_is_a_at_b_plus_bias(kernel, monkeypatch):
    monkeypatch.setattr(op, "pick", lambda a, b, c: kernel)
    monkeypatch.setattr(op, "PLANS", {})  # each layout picked again
    a, b, bias = epilogue_inputs(BIG, 64, 32, torch.float32)
    with common.uninitialized_memory_is_nan():
        c, pre = op.forward(a, b, bias, "gelu_tanh", keep_pre=True)
    p64 = a.double() @ b.double() + bias.double()
    magnitude = a.double().abs() @ b.double().abs() + bias.double().abs()
    common.assert_close(pre, p64, magnitude, 32, f"{kernel}: P", roundoff(torch.float32))
    common.assert_close(c, gelu64(p64), 1.2 * magnitude, 32, f"{kernel}: C", roundoff(a.dtype))
    assert op.forward(a, b, bias, keep_pre=True)[1] is None  # no activation: nothing to keep
    c, pre = torch.ops.triton_lessons.matmul_with_pre(a, b, bias, None)
    assert pre.numel() == 0  # the op's "nothing kept"


@pytest.mark.parametrize("entry", ["matmul", "op"])
def test_bias_and_gelu_gradcheck_and_second_derivatives_float64(entry):
    inputs = epilogue_inputs(9, 7, 5, torch.float64, grad=True)

    def fn(a, b, bias):
        if entry == "op":
            return torch.ops.triton_lessons.matmul(a, b, bias, "gelu_tanh")
        return op.matmul(a, b, bias=bias, activation="gelu_tanh")

    assert torch.autograd.gradcheck(fn, inputs)
    assert torch.autograd.gradgradcheck(fn, inputs)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("m", [17, BIG])
def test_bias_and_gelu_gradients_match_float64(dtype, m):
    n, k = 64, 32
    a, b, bias = epilogue_inputs(m, n, k, dtype, transposed=True, grad=True)
    grad_c = torch.randn(m, n, device=DEVICE).to(dtype)
    op.matmul(a, b, bias=bias, activation="gelu_tanh").backward(grad_c)
    a64, b64, bias64, g64 = (t.detach().double() for t in (a, b, bias, grad_c))
    p64 = a64 @ b64 + bias64
    d_p64 = torch.ops.aten.gelu_backward(g64, p64, approximate="tanh")
    # dP = dC * GELU'(P) is rounded to the dtype, from a P that was too; GELU'' * P is at most
    # 0.6, so one rounding of |dP| + |dC| (epilogue_tolerance) bounds dP's error, and each
    # product below carries it: its magnitude takes |dP| + |dC| in place of |dP|.
    d_p_size = d_p64.abs() + g64.abs()
    for name, ours, expected, magnitude, length in (
        ("dA", a.grad, d_p64 @ b64.T, d_p_size @ b64.abs().T, n),
        ("dB", b.grad, a64.T @ d_p64, a64.abs().T @ d_p_size, m),
        ("dbias", bias.grad, d_p64.sum(0), d_p_size.sum(0), m),
    ):
        common.assert_close(ours, expected, magnitude, length, name, epilogue_tolerance(dtype))


# ---- op.py: the registered ops, opcheck and torch.compile ----


def opcheck_cases():
    def leaf(*shape, dtype=torch.float32, grad=False):
        return torch.randn(*shape, device=DEVICE).to(dtype).requires_grad_(grad)

    return {
        "float32": (leaf(5, 4), leaf(4, 3)),
        "float16, grad": (
            leaf(16, 32, dtype=torch.float16, grad=True),
            leaf(32, 8, dtype=torch.float16, grad=True),
        ),
        "bfloat16": (leaf(7, 9, dtype=torch.bfloat16), leaf(9, 5, dtype=torch.bfloat16, grad=True)),
        "float64, grad": (
            leaf(6, 3, dtype=torch.float64, grad=True),
            leaf(3, 4, dtype=torch.float64),
        ),
        "transposed view": (leaf(4, 6).T, leaf(5, 4).T.detach().requires_grad_()),
        "sliced view": (leaf(12, 10)[::2, 1:9], leaf(8, 6)),
        "bias and GELU, grad": (leaf(6, 5, grad=True), leaf(5, 4), leaf(4, grad=True), "gelu_tanh"),
        "empty": (leaf(0, 4), leaf(4, 3)),
        "k = 0": (leaf(3, 0, grad=True), leaf(0, 5, grad=True)),
    }


@pytest.mark.parametrize("case", list(opcheck_cases()))
def test_opcheck(case):
    # The op with its gradients: opcheck runs its autograd registration too where inputs require
    # grad. matmul_with_pre has no gradients of its own (the entry's Function calls it), so it
    # gets the inputs without grad.
    inputs = opcheck_cases()[case]
    torch.library.opcheck(torch.ops.triton_lessons.matmul.default, inputs)
    plain = [t.detach() if isinstance(t, torch.Tensor) else t for t in inputs]
    torch.library.opcheck(torch.ops.triton_lessons.matmul_with_pre.default, plain)


@pytest.mark.parametrize(
    "dtype, m, n, k", [(torch.float16, BIG, BIG, 32), (torch.float32, 33, 17, 65)]
)
@pytest.mark.parametrize("entry", ["matmul", "op"])
def test_compile_fullgraph_forward_and_backward(monkeypatch, dtype, m, n, k, entry):
    # float16 with 16-byte rows and M > 128: the compiled forward runs persistent.
    picks = spy_on_pick(monkeypatch)
    torch._dynamo.reset()
    fn = op.matmul if entry == "matmul" else torch.ops.triton_lessons.matmul
    compiled = torch.compile(fn, fullgraph=True)
    a, b, grad_c = grad_inputs(m, n, k, dtype)
    c = compiled(a, b)
    expected, magnitude = reference64(a, b)
    common.assert_close(c, expected, magnitude, k, f"compiled {dtype}", roundoff(dtype))
    c.backward(grad_c)
    assert_gradients_match(a, b, grad_c, f"compiled {dtype}")
    assert ("persistent" in picks) == (dtype == torch.float16)
    with torch.no_grad():  # no grad: the compiled graph still calls the op
        c = compiled(a, b)
    common.assert_close(c, expected, magnitude, k, f"compiled, no grad, {dtype}", roundoff(dtype))


@pytest.mark.parametrize("entry", ["matmul", "op"])
def test_bias_and_gelu_compile_fullgraph(entry):
    a, b, bias = epilogue_inputs(BIG, 64, 32, torch.float32, grad=True)
    torch._dynamo.reset()

    def fn(a, b, bias):
        if entry == "op":
            return torch.ops.triton_lessons.matmul(a, b, bias, "gelu_tanh")
        return op.matmul(a, b, bias=bias, activation="gelu_tanh")

    c = torch.compile(fn, fullgraph=True)(a, b, bias)
    p64 = a.double() @ b.double() + bias.double()
    magnitude = 1.2 * (a.double().abs() @ b.double().abs() + bias.double().abs())
    common.assert_close(c, gelu64(p64), magnitude, 32, "compiled", roundoff(torch.float32))
    c.sum().backward()
    # every gradient: under torch.compile the entry's backward takes an as_strided view of the
    # GELU's gradient (op.gradients), which every gradient reads
    inputs64 = [t.detach().double().requires_grad_() for t in (a, b, bias)]
    a64, b64, bias64 = inputs64
    gelu64(a64 @ b64 + bias64).sum().backward()
    for name, got, t64 in zip(("a", "b", "bias"), (a, b, bias), inputs64):
        torch.testing.assert_close(
            got.grad.double(),
            t64.grad,
            rtol=1e-3,
            atol=1e-3,
            msg=lambda m, name=name: f"{name}: {m}",
        )


def test_eager_gradients_skip_the_dispatcher_and_the_op_has_its_own():
    a, b = (torch.randn(8, 8, device=DEVICE, requires_grad=True) for _ in range(2))
    assert support.dispatched_ops(lambda: op.matmul(a, b).sum().backward()) == []
    c = torch.ops.triton_lessons.matmul(a, b)
    assert isinstance(c, torch.Tensor) and c.shape == (8, 8)  # C, as the entry returns
    a.grad = None
    c.sum().backward()
    torch.testing.assert_close(a.grad, torch.ones(8, 8, device=DEVICE) @ b.detach().T)


# ---- GPU only: CUDA graphs and side streams ----


@support.gpu_only
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_capture_in_a_cuda_graph_and_replay(dtype):
    a = torch.randn(256, 128, device=DEVICE, dtype=dtype)
    b = torch.randn(128, 192, device=DEVICE, dtype=dtype)
    out = torch.full((256, 192), float("nan"), device=DEVICE, dtype=dtype)
    graph = common.capture_graph(lambda: op.matmul(a, b, out=out))
    out.fill_(float("nan"))
    a.copy_(torch.randn_like(a))  # new values in the same memory: the replay must read them
    graph.replay()
    torch.cuda.synchronize()
    common.assert_close(out, *reference64(a, b), 128, "graph replay", roundoff(dtype))


@support.gpu_only
def test_call_on_a_side_stream():
    a = torch.randn(512, 256, device=DEVICE, dtype=torch.float16, requires_grad=True)
    b = torch.randn(256, 128, device=DEVICE, dtype=torch.float16, requires_grad=True)
    grad_c = torch.randn(512, 128, device=DEVICE, dtype=torch.float16)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        c = op.matmul(a, b)
        c.backward(grad_c)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    common.assert_close(c, *reference64(a, b), 256, "side stream")
    assert_gradients_match(a, b, grad_c, "side stream")
