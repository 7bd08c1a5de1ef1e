"""What the lessons share to measure and check their kernels; each launches, tunes and registers
its own. Import it before any kernel: without CUDA it sets TRITON_INTERPRET=1 (Triton's switch)."""

import argparse
import contextlib
import functools
import os
import statistics
import sys
import time
import timeit
import warnings

import torch
from torch.autograd import forward_ad

if not torch.cuda.is_available():
    # Triton reads the switch as it is imported: its own helpers (tl.sum) would not run
    # interpreted, and every kernel calling one would fail with an error that names none of this.
    # (A switch set to 0 on purpose, as tools/asm.py does to compile for a GPU, is left be.)
    if "triton" in sys.modules and "TRITON_INTERPRET" not in os.environ:
        raise ImportError(
            "triton was imported before the lessons' common module, and there is no CUDA GPU: "
            "Triton's interpreter must be switched on before triton is imported. Load op.py "
            "(or import common) first, or set TRITON_INTERPRET=1 in the environment."
        )
    os.environ.setdefault("TRITON_INTERPRET", "1")
# Triton takes 1, true, yes, on or y, in any case, as on
INTERPRETED = os.environ.get("TRITON_INTERPRET", "").lower() in ("1", "true", "yes", "on", "y")
if INTERPRETED:  # the interpreter runs tl.sigmoid in numpy, whose exp(-x) warns of an overflow
    # to inf for a large negative x, where the sigmoid is exactly 0, as on a GPU
    warnings.filterwarnings("ignore", "overflow encountered in exp", RuntimeWarning)
DEVICE = torch.device("cuda" if torch.cuda.is_available() and not INTERPRETED else "cpu")

import triton  # noqa: E402  (imported after the interpreter switch on purpose)

from common import launch  # noqa: E402

# A call costs the GPU its kernels' time and the host (Python) the time to queue them. The host
# does not wait, so in a loop a call costs about the larger ("loop ms"); a CUDA graph replays the
# kernels without Python ("GPU ms").
TIMING_COLUMNS = (
    "case", "variant", "GPU ms", "GPU x torch", "loop ms", "loop x torch", "host us",
    "host x torch", "throughput", "unit", "% of ceiling",
)  # fmt: skip


def describe_run():  # one line naming what the numbers were measured on
    where = "Triton interpreter on the CPU" if INTERPRETED else torch.cuda.get_device_name()
    return f"{where} | torch {torch.__version__} | triton {triton.__version__}"


def measure(fn, setup=lambda: None):
    """(GPU ms, host us, loop ms) of fn(), each after setup(). GPU: do_bench's median (L2 flushed)
    of fn() replayed from a CUDA graph, so the host's Python is not counted. Host: the median over
    nine rounds of 100 calls back to back, which the GPU queues (the host never waits). Loop:
    do_bench's median of fn() itself, a plain call as a model makes it: where the host is slower
    than the kernels, its time shows. Interpreted: the median wall time of three calls, and
    neither host nor loop time, since the host does all the work."""
    if INTERPRETED:
        setup()
        fn()
        return statistics.median(timeit.repeat(fn, number=1, repeat=3)) * 1e3, None, None
    gpu = triton.testing.do_bench(capture_graph(fn, setup).replay, return_mode="median")
    setup()
    return gpu, host_us(fn), triton.testing.do_bench(fn, return_mode="median")


def backward_call(fn, inputs, grad_out):
    """(backward, setup) to time a backward alone with measure(backward, setup): autograd.grad
    of fn(*inputs) for grad_out. setup makes new leaves and runs fn on the stream that times
    it: autograd runs each node of a backward on the stream of its forward (a leaf's: where the
    leaf was made)."""
    state = {}

    def setup():
        state["leaves"] = [t.detach().requires_grad_() for t in inputs]
        state["out"] = fn(*state["leaves"])

    def backward():
        return torch.autograd.grad(state["out"], state["leaves"], grad_out, retain_graph=True)

    return backward, setup


def host_us(fn, calls=100, rounds=9):  # host us of a call of fn() on a GPU, as measure() says
    return host_us_each({"fn": fn}, calls, rounds)["fn"]


def host_us_each(fns, calls=100, rounds=9):
    """host_us of each of fns (calls by name): the median over `rounds` of a loop of `calls`
    calls. The rounds of all fns are taken in turn, so that each sees the host as the others
    do: a host's speed drifts, and timed one after another, one row of the host table
    (tools/host.py) ranged 1.36 to 2.56 times its bare launches over three runs."""
    for fn in fns.values():
        fn()  # the first call compiles and tunes
    seconds = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            # Each round starts on an idle GPU (setup is not timed): the host never waits for it.
            seconds[name] += timeit.repeat(fn, setup=torch.cuda.synchronize, number=calls, repeat=1)
    torch.cuda.synchronize()
    return {name: statistics.median(times) / calls * 1e6 for name, times in seconds.items()}


def timing_row(case, variant, times, torch_times, throughput, unit, ceiling=None):
    """A row of TIMING_COLUMNS; times: measure()'s (GPU ms, host us, loop ms). "x torch": torch's
    time over ours."""
    (gpu, host, loop), (torch_gpu, torch_host, torch_loop) = times, torch_times
    host_ratio = None if host is None else torch_host / host
    loop_ratio = None if loop is None else torch_loop / loop
    percent = None if ceiling is None else 100 * throughput / ceiling
    values = (case, variant, gpu, torch_gpu / gpu, loop, loop_ratio, host, host_ratio)
    return dict(zip(TIMING_COLUMNS, (*values, throughput, unit, percent)))


def timing_rows(case, calls, throughput, unit, ceiling=None, suffix=""):
    """Rows of TIMING_COLUMNS: measure() of each of calls (name -> fn, or (fn, setup)), "torch"
    among them; throughput(ms) is a row's throughput in unit; suffix ends each variant's name."""
    times = {name: measure(*c) if isinstance(c, tuple) else measure(c) for name, c in calls.items()}
    return [
        timing_row(case, name + suffix, t, times["torch"], throughput(t[0]), unit, ceiling)
        for name, t in times.items()
    ]


def gbps(nbytes, ms):  # GB/s (10^9 bytes) of moving nbytes in ms milliseconds
    return nbytes / (ms * 1e-3) / 1e9


def tflops(flops, ms):  # TFLOP/s of flops operations in ms milliseconds
    return flops / (ms * 1e-3) / 1e12


@functools.cache
def copy_ceiling_gbps():
    """GB/s (read + written) of a 1 GiB copy, timed eagerly, not in a graph; None under the
    interpreter, where a CPU's copy says nothing of a GPU's memory (a table prints "-")."""
    if INTERPRETED:
        return None
    src = torch.randn(1 << 28, device=DEVICE)
    copy = functools.partial(torch.empty_like(src).copy_, src)
    ms = triton.testing.do_bench(copy, return_mode="median")
    return gbps(2 * src.numel() * src.element_size(), ms)


def capture_graph(fn, setup=lambda: None):
    """setup() and fn() (compiling, tuning), then fn() captured in a CUDA graph, on a side stream:
    the default stream cannot capture, and autograd runs a backward on its forward's stream."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        setup()
        fn()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    return graph


def print_table(rows, columns):
    """rows (dicts) under columns: floats to 4 significant digits, None as a dash. Interpreted,
    the timing columns say "CPU", since the interpreter's time is the CPU's."""
    cells = [
        ["-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v) for v in row]
        for row in ([row.get(col) for col in columns] for row in rows)
    ]
    heads = [col.replace("GPU", "CPU") if INTERPRETED else col for col in columns]
    widths = [max(len(head), *(len(r[i]) for r in cells)) for i, head in enumerate(heads)]
    for line in [heads, ["-" * w for w in widths], *cells]:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)))
    if columns == TIMING_COLUMNS and INTERPRETED:
        print("\nCPU ms: the interpreter's wall time of a call, which says nothing of a GPU's")
        print("speed; x torch: PyTorch's time over ours. On a GPU this table times the kernels,")
        print("and fills the columns that are '-' here (a plain loop, the host, the copy ceiling).")
    elif columns == TIMING_COLUMNS:  # what the timing columns measure
        print("\nGPU ms: do_bench's median of a CUDA-graph replay, L2 flushed; loop ms: the same")
        print("of plain calls, Python included; host us: a call's CPU time; x torch: PyTorch's")
        print("time over ours.")


def assert_close(actual, expected, magnitude, reduction_length, what, product_roundoff=0.0):
    """AssertionError unless actual is within rounding of float64 expected; NaN always fails.
    Allowed per element: u_out * |expected| + (4 sqrt(n) u_acc + product_roundoff) * magnitude:
    magnitude is the maths on |inputs|, n = reduction_length additions (sqrt: random roundings
    mostly cancel), product_roundoff TF32_ROUNDOFF for a TF32 dot. Tight enough to catch a
    dropped row."""
    if actual.shape != expected.shape:
        shapes = tuple(actual.shape), tuple(expected.shape)
        raise AssertionError("{}: shape {}, expected {}".format(what, *shapes))
    allowed = allowed_error(actual.dtype, expected, magnitude, reduction_length, product_roundoff)
    error = (actual.double() - expected).abs()
    excess = torch.where(error <= allowed, 0.0, (error - allowed).nan_to_num(float("inf")) + 1.0)
    if excess.any():
        index = tuple(torch.nonzero(excess == excess.max())[0].tolist())  # the worst element
        got, want, err, bound = (t[index].item() for t in (actual, expected, error, allowed))
        raise AssertionError(
            f"{what}: {int((excess > 0).sum())} of {actual.numel()} elements off; worst at "
            f"{index}: got {got:.6g}, expected {want:.6g}, error {err:.3g} > allowed {bound:.3g}"
        )


# product_roundoff for a tl.dot that rounds float32 inputs to TF32: 10 mantissa bits err by up
# to 2**-11 each, so a product by about 2**-10; 2**-9 leaves a margin of 2.
TF32_ROUNDOFF = 2.0**-9


def assert_close_to_float64(got, reference, inputs, terms, what, tf32=False):
    """AssertionError unless got (a tensor, or a tuple of them) has the inputs' dtype and is
    reference(*inputs) computed in float64, up to rounding: assert_close, with reference on
    |inputs| as each sum's magnitude. terms: the additions in each sum; what: names it in the
    error (each a value, or one per output). tf32: also allow tl.dot's rounding of float32
    inputs to TF32 (TF32_ROUNDOFF)."""
    outputs = got if isinstance(got, tuple) else (got,)
    exact = reference(*(t.double() for t in inputs))
    magnitude = reference(*(t.double().abs() for t in inputs))
    exact, magnitude = (exact, magnitude) if isinstance(exact, tuple) else ((exact,), (magnitude,))
    terms = terms if isinstance(terms, tuple) else (terms,) * len(outputs)
    whats = what if isinstance(what, tuple) else (what,) * len(outputs)
    for out, *expected, length, name in zip(outputs, exact, magnitude, terms, whats, strict=True):
        if not isinstance(out, torch.Tensor):  # a wrapper that forgot its return, say
            raise AssertionError(f"{name}: is {type(out).__name__}, not a tensor")
        if out.dtype != inputs[0].dtype:
            raise AssertionError(f"{name}: is {out.dtype}, not {inputs[0].dtype}")
        assert_close(out, *expected, length, name, TF32_ROUNDOFF if tf32 else 0.0)


def allowed_error(dtype, expected, magnitude, reduction_length, product_roundoff=0.0):
    """assert_close's bound, per element, for a result of `dtype` (float64 tensors in)."""
    u_out = torch.finfo(dtype).eps / 2  # unit roundoff: 2^-11 in float16, 2^-24 in float32
    if INTERPRETED and dtype == torch.bfloat16:
        u_out *= 2  # the interpreter rounds float32 to bfloat16 by truncation: a whole ulp
    u_acc = torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps / 2
    floor = torch.finfo(dtype).tiny  # below it (subnormals) the spacing stops shrinking
    summed = (4 * max(reduction_length, 1) ** 0.5 * u_acc + product_roundoff) * magnitude
    return u_out * expected.abs().clamp_min(floor) + summed


def assert_function_close(fn, inputs, grad_out, reference, terms, names, what):
    """fn(*inputs), and its gradients for grad_out taken by autograd, as assert_outputs_close
    checks them. fn's outputs start as NaN (uninitialized_memory_is_nan)."""
    leaves = [t.detach().requires_grad_() for t in inputs]
    with uninitialized_memory_is_nan():
        out = fn(*leaves)
        if not isinstance(out, torch.Tensor):  # (autograd.grad's own error would not say so)
            raise AssertionError(f"{what}: is {type(out).__name__}, not a tensor")
        got = [out, *torch.autograd.grad(out, leaves, grad_out)]
    assert_outputs_close(got, inputs, grad_out, reference, terms, names, what)


def assert_outputs_close(got, inputs, grad_out, reference, terms, names, what):
    """got, [output, *gradients for grad_out], as assert_close_to_float64 checks outputs: against
    reference()'s output and gradients, taken by autograd in float64, with the same maths on
    |inputs| and |grad_out| for magnitude; terms[i] additions; names[i] names got[i] after what."""

    def output_and_gradients(*tensors):  # reference(*tensors[:-1]) and its grads for tensors[-1]
        *tensors, grad = tensors
        leaves = [t.detach().requires_grad_() for t in tensors]
        out = reference(*leaves)
        return (out.detach(), *torch.autograd.grad(out, leaves, grad))

    whats = tuple(f"{what}: {name}" for name in names)
    everything = (*inputs, grad_out)
    assert_close_to_float64(tuple(got), output_and_gradients, everything, tuple(terms), whats)


def check_op(doc, calls, reference, cases, argv=None):
    """What an op.py does run as a script: each of calls (name: function) on each case
    (make_inputs, terms) of each dtype asked for (--dtype; all of OP_DTYPES by default), where
    make_inputs(t) gives the inputs (t(*shape): a random tensor of the dtype), and terms the
    additions in the output's sums and each gradient's. Its output and gradients against
    reference's in float64 (assert_function_close), its inputs unchanged: one line each, "ok"
    or what is wrong, and the seconds it took. Returns the exit status: 1 if any was wrong."""
    names = {str(dtype).removeprefix("torch."): dtype for dtype in OP_DTYPES}
    epilog = """Run as a script, it checks the op on this machine: its output and gradients
against float64, through the function and the registered op. On a GPU each new kind of call
(dtype, layout, size class) compiles and tunes its kernels first, as a model's first calls
do: seconds each, minutes for 02's many kinds, and no time once Triton's cache holds them."""
    parser = argparse.ArgumentParser(
        description=doc, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dtype", choices=[*names, "all"], default="all", help="the dtype to check (all)"
    )
    args = parser.parse_args(argv)
    print(describe_run())
    print("Each line: output and gradients against float64, up to rounding; inputs unchanged.")
    chosen = names if args.dtype == "all" else {args.dtype: names[args.dtype]}
    wrong = 0
    for make_inputs, terms in cases:
        for dtype_name, dtype in chosen.items():
            for name, fn in calls.items():
                inputs = make_inputs(lambda *shape: torch.randn(shape, dtype=dtype, device=DEVICE))
                if len(terms) != 1 + len(inputs):
                    raise ValueError(f"{len(terms)} terms for an output and {len(inputs)} inputs")
                start = time.perf_counter()
                problem = op_problem(fn, inputs, reference, terms, name)
                took = f"({time.perf_counter() - start:.1f} s)"
                shapes = ", ".join(map(shape_and_view, inputs))
                what = f"{name}({shapes}) {dtype_name}"
                wrong += problem is not None
                print(f"WRONG  {what}: {problem} {took}" if problem else f"ok     {what} {took}")
    return 1 if wrong else 0


def op_problem(fn, inputs, reference, terms, name):
    """What is wrong with fn on inputs (check_op's), or None."""
    kept = [t.clone() for t in inputs]
    grad_out = torch.randn_like(reference(*inputs))
    names = ("output", *(f"gradient {i}" for i in range(len(inputs))))
    try:
        assert_function_close(fn, inputs, grad_out, reference, terms, names, name)
    except Exception as error:  # a wrong value, or an error the op raised
        return f"{type(error).__name__}: {error}"
    changed = [i for i, (t, k) in enumerate(zip(inputs, kept)) if not torch.equal(t, k)]
    if changed:
        return f"it changed input {changed[0]}, which it only reads"


def shape_and_view(t):  # "17x40", and " (a view)" where its elements do not lie in a row
    return "x".join(map(str, t.shape)) + ("" if t.is_contiguous() else " (a view)")


@contextlib.contextmanager
def uninitialized_memory_is_nan():
    """Inside, torch.empty and its kin fill floats with NaN, so an element a kernel never writes
    shows. Deterministic mode does this; warn_only, its warnings quiet, so it refuses no op."""
    was_on = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Deterministic behavior was enabled", UserWarning)
            yield
    finally:
        torch.use_deterministic_algorithms(was_on, warn_only=warn_only)


# The dtypes every op.py takes: the kernels an op launches sum 16-bit inputs in float32 and
# float64 ones in float64.
OP_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


# Forward-mode AD (torch.autograd.forward_ad): inside a dual_level, an input may carry a tangent,
# the direction its derivative is taken in. Only an autograd.Function's jvp passes one on: a
# kernel called on the tensors would drop it, and the output's tangent would be silently missing.
def dual_level_open(forward_ad=forward_ad):  # whether a forward_ad.dual_level is open (its
    # module keeps the level); forward_ad bound here, as write_out's arguments are, for Dynamo
    return forward_ad._current_level >= 0


def carries_tangent(tensors, level_open=dual_level_open, forward_ad=forward_ad, torch=torch):
    """Whether a dual level is open and a tensor among tensors (others skipped) carries a
    tangent there (bound as dual_level_open's forward_ad is)."""
    return level_open() and any(
        forward_ad.unpack_dual(t).tangent is not None
        for t in tensors
        if isinstance(t, torch.Tensor)
    )


def sum_present(*terms):  # the sum of the terms that are not None (a jvp's, at least one is)
    present = [t for t in terms if t is not None]
    return sum(present[1:], present[0])


def refuse_negated(is_compiling=torch.compiler.is_compiling, **tensors):
    """ValueError naming the first of the tensors that is a negated view: the real or imaginary
    part of a conjugated complex tensor (t.is_neg()), whose values are its memory's with their
    signs flipped. A kernel reads the memory, so it would flip every sign; PyTorch's ops resolve
    the view. Skipped while torch.compile's Dynamo traces, which cannot trace is_neg() (and reads
    no global here: is_compiling is bound, as write_out's arguments are). Compiled, the graph
    resolves the view before the registered op runs; Inductor in torch 2.13 drops the negation
    there, for torch.mm too (on the CPU; aot_eager keeps it)."""
    if is_compiling():
        return
    for name, t in tensors.items():
        if t.is_neg():
            raise ValueError(f"{name} is a negated view (is_neg()): pass {name}.resolve_neg()")


# check_out, write_out and kernel_out read no global of this module: torch.compile's Dynamo traces
# them (the entries, compiled, hand out= to write_out alone; after a graph break, Dynamo traces
# the eager path's frames, kernel_out's caller among them), and to read a module's global it
# imports the module by its name, which fails where a script loaded this module by its path (the
# README's way). So what they use comes in as arguments, bound when they are defined.
def check_out(out, shape, dtype, device, torch=torch):
    """TypeError or ValueError unless out is a tensor of this shape, dtype and device, as PyTorch's
    out= asks."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    got, wanted = (tuple(out.shape), out.dtype, out.device), (tuple(shape), dtype, device)
    if got != wanted:
        raise ValueError("out is {} {} on {}, expected {} {} on {}".format(*got, *wanted))


def write_out(
    result, out, check_out=check_out, bump=torch.autograd.graph.increment_version,
    grad_enabled=torch.is_grad_enabled,
):  # fmt: skip
    """result, or out holding it with its version bumped (as by any in-place write): a backward
    that saved out then raises rather than run on the new values. An out that is not result is
    checked by check_out first (kernel_out checked one a kernel wrote): compiled, the entries hand
    out= to this alone, and copy_ would broadcast and cast it silently, and record its grad."""
    if out is None:
        return result
    if out is not result:
        check_out(out, result.shape, result.dtype, result.device)
        if grad_enabled() and result.requires_grad:  # as kernel_out refuses, eager
            raise ValueError("out= is not differentiable: an input requires grad")
        if grad_enabled() and out.requires_grad:  # (copy_ would raise PyTorch's leaf error)
            raise ValueError(
                "out requires grad, and a kernel's write into it is not differentiable"
            )
        out.copy_(result)
    bump(out)
    return out


def kernel_out(
    out, shape, inputs, check_out=check_out, refuse_negated=refuse_negated,
    carries_tangent=carries_tangent, torch=torch,
):  # fmt: skip
    """The tensor a kernel writes, of the first input's dtype and device: out, checked as
    PyTorch's out= is, or a new one if out is None or shares storage with an input the kernel
    reads (write_out then copies it into out)."""
    if out is None:  # new_empty, of inputs[0]'s dtype, costs the host 1 us less than empty
        return inputs[0].new_empty(shape)
    check_out(out, shape, inputs[0].dtype, inputs[0].device)
    refuse_negated(out=out)  # a kernel's writes would read back with their signs flipped
    if out.is_inference() and not torch.is_inference_mode_enabled():  # as PyTorch's in-place ops
        raise ValueError("out is an inference tensor: it may be written inside inference_mode only")
    if torch._debug_has_internal_overlap(out) == 1:  # an expand()ed view: writes would collide
        raise ValueError(f"out has strides {out.stride()}: elements share one memory location")
    if torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
        raise ValueError("out= is not differentiable: an input requires grad; call without out=")
    if torch.is_grad_enabled() and out.requires_grad:
        raise ValueError("out requires grad, and a kernel's write into it is not differentiable")
    if carries_tangent((*inputs, out)):
        raise ValueError(
            "out= is not differentiable: an input or out carries a forward-mode tangent"
        )
    if any(t.untyped_storage().data_ptr() == out.untyped_storage().data_ptr() for t in inputs):
        return inputs[0].new_empty(shape)
    return out


def dot_inputs(*tensors):
    """The tensors, but bfloat16 ones as float32 under the interpreter, whose tl.dot multiplies
    bfloat16 as if it were 16-bit integers (Triton 3.6 to 3.9); on a GPU, the tensors as given."""
    if not INTERPRETED:
        return tensors
    return tuple(t.float() if t.dtype == torch.bfloat16 else t for t in tensors)


def descriptor_problem(tensor):
    """Why a tensor descriptor cannot describe `tensor`, or None: a GPU may misread it silently."""
    if tensor.numel() == 0:
        return "the tensor is empty"
    if max(tensor.shape) >= 2**31:
        return f"shape {tuple(tensor.shape)} has a dimension of 2^31 or more (sizes are int32)"
    if address(tensor) % 16:
        return f"its base address {address(tensor):#x} is not 16-byte aligned"
    if tensor.stride(-1) != 1:
        return f"its last stride is {tensor.stride(-1)}, not 1"
    for dim, stride in enumerate(tensor.stride()[:-1]):
        if (nbytes := stride * tensor.element_size()) % 16 or stride == 0:
            return f"stride {stride} of dim {dim} is {nbytes} bytes, not a positive multiple of 16"


def address(tensor):
    """tensor's first element's address; for a tensor that torch.compile traces, which has none,
    its offset into its storage, as torch.compile keeps a storage's start 16-byte aligned."""
    try:
        return tensor.data_ptr()
    except RuntimeError:  # "Cannot access data pointer of Tensor (e.g. FakeTensor ...)"
        return tensor.storage_offset() * tensor.element_size()


def cdiv(n, d):
    """triton.cdiv(n, d), the ceiling of n / d, as plain Python for op.py's per-call host work:
    triton.cdiv is a constexpr_function, whose wrapper costs about 2 us a call on an H200's host.
    Sizes that torch.compile traces (SymInt) work too."""
    return (n + d - 1) // d


def next_power_of_2(n):
    """triton.next_power_of_2(n) for n >= 1 (1 for 0), as plain Python: Triton's costs about
    2 us a call on an H200's host, as triton.cdiv does."""
    return 1 << max(n - 1, 0).bit_length()


def elements_spanned(tensor):
    """1 + the largest offset, in elements, from tensor's first element to any other (0 if it is
    empty): what int32 offsets into it must reach."""
    if tensor.numel() == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))


def op_autotune(configs, key, prune):
    """triton.autotune as the ops use it on a lesson's kernel: prune(configs, named_args) drops
    configs first; each is timed for 5 + 20 ms (Triton's default: 25 + 100); cache_results keeps
    the winner on disk for the next process."""
    return triton.autotune(
        configs=configs,
        key=key,
        prune_configs_by={"early_config_prune": prune},
        do_bench=functools.partial(triton.testing.do_bench, warmup=5, rep=20),
        cache_results=True,
    )


@functools.cache  # asked once per device
def sm_count(device):
    """The SMs (streaming multiprocessors) of a CUDA device; 3 under the interpreter, so that a
    persistent kernel's programs each walk a few tiles."""
    return 3 if INTERPRETED else torch.cuda.get_device_properties(device).multi_processor_count


def random_matrix(rows, cols, dtype=torch.float32, transposed=False):
    """A random (rows, cols) matrix on DEVICE, drawn in float32; transposed: a .T view, as W.T."""
    t = torch.randn((cols, rows) if transposed else (rows, cols), device=DEVICE).to(dtype)
    return t.T if transposed else t


def set_descriptor_allocator():
    """Scratch memory for in-kernel tensor descriptors: allocator(size, alignment, stream). Triton
    keeps it per thread (a context variable): set it before each launch."""
    triton.set_allocator(lambda size, *_: torch.empty(size, dtype=torch.int8, device=DEVICE))


try:  # Dynamo's frame hook, set while a torch.compile'd function runs, and its mark for a function
    # whose own frame it never compiles (private; in torch 2.11 to 2.13)
    from torch._C._dynamo.eval_frame import get_eval_frame_callback
    from torch._dynamo.decorators import skip as not_compiled
except ImportError:  # a torch without them: eager_path always takes torch.compiler.disable's way
    get_eval_frame_callback = bool  # (bool() is False, never None)
    not_compiled = functools.partial(torch.compiler.disable, recursive=False)


# Triton launches a kernel on the current GPU, whatever GPU its tensors lie on. A model spread
# over GPUs (device_map="auto") calls an op on cuda:1 while cuda:0 is current: the kernel then
# ran on cuda:0, beside the work that made its inputs on cuda:1 (Liger-Kernel's issue 1303 saw
# wrong values and "cannot be accessed from Triton" errors). So on a machine with more than one
# GPU an op's eager calls run with the current device set to their inputs' GPU, as PyTorch's own
# ops do; autograd already sets it for a backward, and Inductor's compiled graph for its launches.
MANY_GPUS = DEVICE.type == "cuda" and torch.cuda.device_count() > 1


def on_inputs_gpu(fn, many_gpus=MANY_GPUS):
    """fn, called with the current CUDA device set to the GPU of its first argument (a tensor)
    where that is not the current one; fn itself on a machine with one GPU or none."""
    if not many_gpus:
        return fn

    @functools.wraps(fn)
    def on_gpu(*args, **kwargs):
        first = args[0] if args else None
        gpu = first.get_device() if isinstance(first, torch.Tensor) else -1
        if gpu < 0 or gpu == torch.cuda.current_device() or torch.compiler.is_compiling():
            return fn(*args, **kwargs)  # no GPU tensor (validate() names it), or on it already
        with torch.cuda.device(gpu):
            return fn(*args, **kwargs)

    return on_gpu


def eager_path(fn, dynamo_hook=get_eval_frame_callback):
    """An entry's eager path fn, which torch.compile's Dynamo must never trace: inside a compiled
    function, where Dynamo gives up on a frame that calls the entry (as it does from then on once
    the entry raised an error there), it would trace each frame the path calls, and fail (on this
    module's helpers, and on Triton's launch). So there fn runs through torch.compiler.disable
    (also eager_path(fn).untraced, for a compiled entry to call: a graph break); outside any
    compiled function, where Dynamo's hook is unset, fn itself, as disable's wrapper costs the
    host 1.2 to 2.6 us a call (H200 host) and this check 0.1 to 0.6. Either way on its inputs'
    GPU (on_inputs_gpu)."""
    fn = on_inputs_gpu(fn)
    untraced = torch.compiler.disable(fn)

    @functools.wraps(fn)
    def run(*args):
        return (fn if dynamo_hook() is None else untraced)(*args)

    run.untraced = untraced
    # Where Dynamo gave up on the entry's frame, it had compiled run's too (warning of the hook)
    return not_compiled(run)


def refuse_unstrided(inputs):  # TypeError naming a sparse or nested tensor among inputs
    for t in (t for t in inputs if isinstance(t, torch.Tensor)):
        if t.is_nested or t.layout != torch.strided:
            kind = "nested" if t.is_nested else str(t.layout)
            raise TypeError(f"an input is a {kind} tensor: the kernels read dense (strided) ones")


def register_op(name):
    """A decorator that registers a function as the op torch.ops.<name>. On a GPU it is a
    torch.library.triton_op: torch.compile traces its body and launches its kernels itself, so
    the body launches each through traceable(). Under the interpreter a custom_op, which the
    compiler never enters: tracing would run the interpreted kernels on tensors without data.
    A sparse input, and one that carries a forward-mode tangent, is refused (refusing); an
    eager call runs on its inputs' GPU (on_inputs_gpu)."""
    register = torch.library.custom_op if INTERPRETED else torch.library.triton_op
    return lambda fn: register(name, refusing(name, on_inputs_gpu(fn)), mutates_args=())


def refusing(name, fn, tangent_in=carries_tangent, refuse_unstrided=refuse_unstrided):
    """fn, but a TypeError naming a sparse input (refuse_unstrided: a kernel would read no
    values; PyTorch refuses a nested one before the body runs), and a NotImplementedError
    where an input carries a forward-mode tangent (inside
    forward_ad.dual_level): PyTorch's custom ops take no jvp, so their output would carry none,
    silently. Refused too where the tangents cannot be seen: inside a compiled graph run in a
    dual level (on the CPU, torch 2.13), where unpack_dual fails an internal assert of PyTorch's.
    Under torch.func's jvp and jacfwd the tangents are out of the body's sight, and the op's
    tangent comes out zero, as any custom op's. The entries take their Functions, and
    compiled, run eagerly in a dual level."""

    @functools.wraps(fn)  # the op's schema is read from fn's signature
    def body(*args, **kwargs):
        refuse_unstrided((*args, *kwargs.values()))
        try:
            seen = tangent_in((*args, *kwargs.values()))
        except RuntimeError:  # (the compiled graph's case above)
            seen = None
        if seen is not False:  # True, or None: not seen
            refused = (
                "an input that carries a tangent"
                if seen
                else "inputs whose tangents it cannot see (inside a compiled graph)"
            )
            raise NotImplementedError(
                f"torch.ops.{name.replace('::', '.')} has no forward-mode derivative (PyTorch's "
                f"custom ops take no jvp), so it refuses {refused}: call op.py's entry, eager, "
                "inside forward_ad.dual_level"
            )
        return fn(*args, **kwargs)

    return body


# Triton's interpreter keeps one state for the process: the grid of the launch it runs, and
# triton.language patched while a kernel runs. Two threads launching at once fail, or could run
# on each other's state, so op.py's launches take turns there (the turns of launch.py's calls
# through Triton).
class OneAtATime:
    """kernel[grid](...) under launch.THROUGH_TRITON: traceable's kernels under the
    interpreter, and a registered op's eager launches through wrap_triton (Triton's own)."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        def in_turn(*args, **kwargs):
            with launch.THROUGH_TRITON:
                return self.kernel[grid](*args, **kwargs)

        return in_turn


def traceable(kernel, in_op, kind=None):
    """kernel as op.py launches it. in_op: from a registered op's body, where on a GPU it goes
    through wrap_triton, so that torch.compile records the launch (an eager call of the op
    launches through Triton, one thread at a time: OneAtATime). Elsewhere on a GPU its
    Launcher (common/launch.py): the kernel Triton compiled for the call, launched with less of
    the host's time; kind: the caller's key for what Triton compiles for (launch.Named). Under
    the interpreter the kernel, launched by one thread at a time (OneAtATime)."""
    if INTERPRETED:
        return OneAtATime(kernel)
    if not in_op:
        return launch.launcher(kernel, kind)
    wrapped = torch.library.wrap_triton(kernel)  # what torch.compile traces; eager, Triton's call
    return wrapped if torch.compiler.is_compiling() else OneAtATime(wrapped)


def heuristics_applied(kernel, args):
    """(the kernel inside a @triton.heuristics kernel, args with the arguments its rules set):
    wrap_triton takes no heuristics kernel, so op.py applies the rules itself. args by name.
    A rule sets a constant: a size that torch.compile keeps symbolic is fixed to its value."""
    args = {k: int(v) if isinstance(v, torch.SymInt) else v for k, v in args.items()}
    for name, rule in kernel.values.items():
        args[name] = rule(args)
    return kernel.fn, args


# A plan: what an op.py's entry works out from its inputs' layouts (the kernel, the split, the
# grid), kept as a function that launches the same for the next inputs of those layouts. A model
# calls a few layouts again and again, and working these out each call cost the host more than
# the launches did (results/NOTES.md items 172, 179, 191). Each op keeps its plans in a dict.
PLANS_KEPT = 1024  # layouts an op keeps planned: past that, forgotten and planned again


def layout(t):  # a tensor's part of a plan's key: all of it that a kernel is compiled for, and
    # whether it is a negated view, which validate() refuses (refuse_negated)
    if not (address := t.data_ptr()) and t.numel():  # a fake tensor's: refuse_without_storage
        raise RuntimeError("a tensor whose elements lie at address 0, as a fake tensor's")
    return t.shape, t.stride(), t.dtype, t.device, address % 16, t.is_neg()


def checked_key(key_of, validate, *inputs):
    """key_of(*inputs), an entry's plan key, made before the inputs are checked. Where it trips on
    a bad input (no tensor: AttributeError; a name none of the op's, by its index: ValueError; a
    tensor whose memory it cannot read: RuntimeError), validate(*inputs) raises, naming it: out
    of the except clause, so that its error comes alone, not below the key's. validate() does not
    look for the last kind: refuse_unstrided() and refuse_without_storage() name it."""
    try:
        return key_of(*inputs)
    except (AttributeError, ValueError, RuntimeError) as error:
        tripped = error
    unreadable = isinstance(tripped, RuntimeError)
    if unreadable:
        refuse_unstrided(inputs)  # before validate(), which cannot read a nested tensor's shape
    validate(*inputs)  # (which names a meta tensor's device)
    if unreadable:
        refuse_without_storage(inputs)
    raise tripped  # validate() found nothing wrong: the key's own error


def refuse_without_storage(inputs):
    """TypeError if a tensor among inputs has no memory the kernels could read: inside torch.func's
    vmap or grad, a batched gradient (autograd.grad's is_grads_batched) or a fake tensor."""
    if not all(map(has_storage, inputs)):
        raise TypeError(
            "an input is a tensor without storage, as inside torch.func's vmap or grad, a batched "
            "gradient or a fake tensor: the kernels read memory, so call the op on tensors that "
            "hold it"
        )


def has_storage(t):  # False for a tensor whose data pointer PyTorch refuses, or gives as 0
    if not isinstance(t, torch.Tensor):
        return True
    try:
        return t.data_ptr() != 0 or t.numel() == 0
    except RuntimeError:
        return False


def kept_plan(plans, key, plan, *inputs):
    """plans[key], made by plan(*inputs, key=key) where new (emptying plans first once it holds
    PLANS_KEPT). key: all that decides the kernels and their arguments but the addresses."""
    if (planned := plans.get(key)) is None:
        if len(plans) >= PLANS_KEPT:
            plans.clear()
        plans[key] = planned = plan(*inputs, key=key)
    return planned
