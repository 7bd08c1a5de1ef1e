"""The little code the examples share: device choice, timing, throughput and a result table.

Import it before defining any Triton kernel. Without CUDA it switches on Triton's CPU interpreter
(TRITON_INTERPRET=1), and Triton reads that flag when a kernel is decorated, not when it runs.
Setting TRITON_INTERPRET=1 yourself runs the interpreter on a GPU machine too.
"""

import functools
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = torch.device("cpu" if INTERPRETED else "cuda")

import triton  # noqa: E402  (imported after the interpreter switch on purpose)
import triton.language as tl  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent

# The columns of every result table, in main() and in `make bench`.
RESULT_COLUMNS = ("case", "variant", "ms", "throughput", "unit", "% of ceiling", "x torch")


def describe_run():
    """One line naming what the numbers below were measured on."""
    if INTERPRETED:
        where = "Triton interpreter on the CPU: timings show the interpreter, not GPU performance"
    else:
        where = torch.cuda.get_device_name(DEVICE)
    return f"{where} | torch {torch.__version__} | triton {triton.__version__}"


def capture_graph(fn, setup=None):
    """Run setup() and fn() once (compiling and autotuning), then capture fn()'s launches in a CUDA graph.

    Everything runs on one side stream (graphs cannot be captured on the default one), setup()
    too: autograd runs a backward on the stream of its forward, so a forward made in setup() is
    where a captured backward needs it. Returns the torch.cuda.CUDAGraph; graph.replay() reruns it.
    """
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        if setup is not None:
            setup()
        fn()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    return graph


def bench(fn, setup=None, warmup_ms=25):
    """Median time of fn() in milliseconds. setup(), if given, runs once first.

    On a GPU, fn() is captured in a CUDA graph (capture_graph) and triton.testing.do_bench times
    the graph's replays: CUDA events, the L2 cache cleared between runs, the median. A graph
    replays the kernels without Python: an eager call of these wrappers costs 20 to 150 us of CPU
    time, as much as the GPU work on the sizes here, and would measure Python rather than the
    kernel. PyTorch's side is timed the same way. warmup_ms is how long do_bench replays the
    graph untimed first; work that holds the GPU at its power limit needs about a second for the
    clock to settle (see 02_matmul_tiled).

    On the CPU do_bench cannot run (it needs a GPU driver), so a wall clock takes the median of
    three runs after one warm-up.
    """
    if not INTERPRETED:
        graph = capture_graph(fn, setup)
        return triton.testing.do_bench(graph.replay, warmup=warmup_ms, rep=100, return_mode="median")
    if setup is not None:
        setup()
    fn()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


@functools.cache
def multiprocessor_count(device):
    """How many SMs the CUDA device (a torch.device or an index) has; asked once per device."""
    return torch.cuda.get_device_properties(device).multi_processor_count


def gbps(nbytes, ms):
    """Throughput in GB/s (10^9 bytes) of moving nbytes in ms milliseconds."""
    return nbytes / (ms * 1e-3) / 1e9


def tflops(flops, ms):
    """Arithmetic rate in TFLOP/s of flops operations in ms milliseconds."""
    return flops / (ms * 1e-3) / 1e12


@functools.cache
def copy_ceiling_gbps():
    """Device-to-device copy bandwidth, bytes read plus bytes written, measured now.

    This is the roof for a memory-bound kernel on this machine today: a kernel that reads and
    writes each byte once cannot beat a plain copy. 1 GiB on a GPU (far past its L2 cache),
    16 MiB under the interpreter.
    """
    numel = (1 << 28) if not INTERPRETED else (1 << 22)
    src = torch.randn(numel, device=DEVICE)
    dst = torch.empty_like(src)
    if INTERPRETED:
        ms = bench(lambda: dst.copy_(src))
    else:
        # Eager, not bench()'s CUDA graph: captured in a graph this copy ran at about 2700 GB/s
        # on an H200 (most likely a memcpy node on the copy engines) against 4225 eager. At
        # 1 GiB the launch overhead is lost in the noise anyway.
        ms = triton.testing.do_bench(lambda: dst.copy_(src), warmup=25, rep=100, return_mode="median")
    return gbps(2 * src.numel() * src.element_size(), ms)


UNIT_ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24, torch.float64: 2.0**-53}


def assert_close(actual, expected, magnitude, reduction_length, what, product_roundoff=0.0):
    """Raise AssertionError unless `actual` matches the float64 `expected` within rounding error.

    magnitude: the same computation on absolute values (|x| @ |w|, |x|.sum(0), ...), float64.
    reduction_length: how many products each output element sums.
    product_roundoff: relative error of each product when the inputs are rounded first
    (2**-10 for a TF32 dot), 0 when products are exact in the accumulator.

    The bound per element is u_out * |expected| for rounding the result into its dtype, plus
    (4 * sqrt(n) * u_acc + product_roundoff) * magnitude for n additions in the accumulator, which
    is float32 for 16- and 32-bit inputs and float64 for float64. sqrt(n) rather than n: the
    errors of n roundings on random data mostly cancel, and a tight bound still catches a dropped
    row at the test sizes. NaN anywhere fails, which is why checks fill outputs with NaN first.
    """
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}")
    if actual.numel() == 0:
        return
    u_out = UNIT_ROUNDOFF[actual.dtype]
    if INTERPRETED and actual.dtype == torch.bfloat16:
        # Triton's interpreter (3.6 to 3.9) converts float32 to bfloat16 by truncation where a GPU
        # rounds to nearest: a whole unit in the last place instead of half of one.
        u_out *= 2
    u_acc = UNIT_ROUNDOFF[torch.float64 if actual.dtype == torch.float64 else torch.float32]
    allowed = u_out * expected.abs() + (4 * max(reduction_length, 1) ** 0.5 * u_acc + product_roundoff) * magnitude
    error = (actual.double() - expected).abs()
    excess = torch.where(error <= allowed, 0.0, (error - allowed).nan_to_num(float("inf")) + 1.0)
    if excess.any():
        worst = int(excess.flatten().argmax())
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), actual.shape))
        bad = int((excess > 0).sum())
        raise AssertionError(
            f"{what}: {bad} of {actual.numel()} elements off; worst at {index}: "
            f"got {actual.flatten()[worst].item():.6g}, expected {expected.flatten()[worst].item():.6g}, "
            f"error {error.flatten()[worst].item():.3g} > allowed {allowed.flatten()[worst].item():.3g}"
        )


def print_table(rows, columns):
    """Print rows (dicts) as an aligned table of the given columns; floats get 4 significant digits."""

    def cell(value):
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    cells = [[cell(row.get(col)) for col in columns] for row in rows]
    widths = [max(len(col), *(len(r[i]) for r in cells)) for i, col in enumerate(columns)]
    print("  ".join(col.ljust(w) for col, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


@functools.cache
def block_pointers_unavailable():
    """Why this Triton cannot run block pointers, or None when it can.

    Detect the feature, not the version: Triton 3.8 prints a deprecation and its interpreter
    fails on them, 3.9 removed them, and builds of Triton's main branch report old version
    numbers. So run a tiny kernel that copies 16 numbers through a block pointer and see.
    """
    try:
        src = torch.arange(16, dtype=torch.float32, device=DEVICE)
        dst = torch.full_like(src, float("nan"))
        _block_ptr_probe_kernel[(1,)](src, dst)
        if not torch.equal(src, dst):
            return "a block-pointer copy returned wrong values"
    except Exception as exc:  # any failure means "do not use block pointers here"
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"tl.make_block_ptr does not run on triton {triton.__version__}: {first_line[:120]}"
    return None


@triton.jit
def _block_ptr_probe_kernel(src_ptr, dst_ptr):
    src = tl.make_block_ptr(src_ptr, shape=(16,), strides=(1,), offsets=(0,), block_shape=(16,), order=(0,))
    dst = tl.make_block_ptr(dst_ptr, shape=(16,), strides=(1,), offsets=(0,), block_shape=(16,), order=(0,))
    tl.store(dst, tl.load(src))


def descriptor_unsupported(tensor):
    """Why a tensor descriptor cannot describe this 2-D tensor, or None when it can.

    A tensor descriptor (and the TMA unit behind it on Hopper) needs a 16-byte aligned base
    address, a last stride of 1, every other stride a multiple of 16 bytes, and int32 sizes. On an H200 with
    Triton 3.6 a descriptor that breaks these rules returned wrong sums without any error, so
    the wrappers check here and never launch such a kernel.
    """
    if tensor.numel() == 0:
        return "the tensor is empty"
    if max(tensor.shape) >= 2**31:
        return f"shape {tuple(tensor.shape)} has a dimension of 2^31 or more (descriptor shapes are int32)"
    if tensor.data_ptr() % 16:
        return f"its base address {tensor.data_ptr():#x} is not 16-byte aligned"
    if tensor.stride(-1) != 1:
        return f"its last stride is {tensor.stride(-1)}, not 1"
    for dim, stride in enumerate(tensor.stride()[:-1]):
        if stride * tensor.element_size() % 16:
            return f"stride {stride} of dim {dim} is {stride * tensor.element_size()} bytes, not a multiple of 16"
    return None


def _descriptor_scratch(size, alignment, stream):
    return torch.empty(size, dtype=torch.int8, device=DEVICE)


def set_descriptor_allocator():
    """Give Triton the scratch memory that in-kernel tensor descriptors need on the GPU.

    tl.make_tensor_descriptor builds its descriptor in global memory at run time. The allocator
    lives in a context variable, and autograd may run backward on another thread, so call this
    right before each launch rather than once at import.
    """
    triton.set_allocator(_descriptor_scratch)


def load_example(path):
    """Import an example's main.py by path (the folders start with digits, every file is main.py)."""
    path = Path(path).resolve()
    name = "example_" + path.parent.name
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def example_paths():
    """Every example's main.py, in reading order."""
    return sorted(REPO_ROOT.glob("[0-9][0-9]_*/main.py"))
