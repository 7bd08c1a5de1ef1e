"""matmul: lesson 02's kernels as an op a model can call.

main.py, fused.py and persistent.py beside this file teach the kernels; this file makes them safe
to call from a model, and adds nothing to what they compute:
- `matmul(a, b, bias=None, activation=None, *, out=None)` computes activation(a @ b + bias)
  (ACTIVATIONS: None or "gelu_tanh"). It checks its inputs (TypeError or ValueError naming what
  is wrong), writes into `out=` (which may overlap a or b), runs the lesson's persistent kernel
  where it is fastest and its fused kernel elsewhere, and records gradients, second ones too;
- `torch.ops.triton_lessons.matmul(a, b, bias, activation)` is the same op registered with
  PyTorch, with its gradients, so that `torch.compile(fullgraph=True)` takes it: on a GPU a
  `torch.library.triton_op`, whose kernels the compiled code launches itself; under the
  interpreter a `custom_op`. `matmul` itself, compiled, calls a second op, `matmul_with_pre`,
  which also returns P = a @ b + bias, so that its backward need not compute P again.

From a script anywhere, load this file by its path (the README shows how, for lesson 01's op).
Without a GPU, loading it sets TRITON_INTERPRET=1 for the process, so that Triton runs the kernels
on the CPU.
Run as a script (`python 02_matmul_tiled/op.py`), it checks the op on this machine (--help).
"""

import importlib.util
import itertools
import sys
from pathlib import Path

import torch
from torch import Tensor

HERE = Path(__file__).resolve().parent


# lesson_loader.py, at the repository's root, loads main.py beside this file (it says how, and
# why); it is loaded by its path, so that no module of the caller's can hide it.
LOADER = HERE.parent / "lesson_loader.py"
spec = importlib.util.spec_from_file_location("_triton_lessons_loader", LOADER)
spec.loader.exec_module(loader := importlib.util.module_from_spec(spec))
lesson = loader.load_lesson(HERE)
fused = loader.load_lesson(HERE, "fused.py")  # the lesson's Part 3
persistent = loader.load_lesson(HERE, "persistent.py")  # the lesson's Part 4
stream_k = loader.load_lesson(HERE, "stream_k.py")  # the lesson's Part 5
common = lesson.common  # the device, and the checks of out= that every op shares
# triton from the lesson, which imported it after common set TRITON_INTERPRET=1 on a CPU:
# imported before that, Triton's own @triton.jit helpers (tl.sum) would not run interpreted.
triton, tl = lesson.triton, lesson.tl

DTYPES = common.OP_DTYPES  # float16, bfloat16, float32 and float64
ACTIVATIONS = (None, "gelu_tanh")  # what the kernels' epilogue applies after the bias


# The lesson's fused kernel, keyed as a model needs it: fused.py's fused_matmul_kernel is
# called inside this one, and Triton compiles it in (a @triton.jit function may call another).
# The key holds M and K in buckets (buckets_of), so that a new token count reuses a pick (K
# too, since dB = A^T @ dC sums over the tokens), and tells apart transposed operands
# (stride_ak or stride_bn not 1) and TF32, which run best with other tiles. The name is the
# lesson's: torch.compile copies a called kernel's source, `def fused_matmul_kernel(...)`,
# beside this.
fused_matmul_kernel = fused.fused_matmul_kernel.fn  # the lesson's kernel, without its autotuner


def exact_tiles(configs, named_args, **kwargs):
    """The configs to time: every one, but in exact float32 and float64 (INPUT_PRECISION "ieee":
    no tensor cores) only tiles of at most 64 x 64 values. Those won every bucket there
    (results/NOTES.md items 188, 194); the larger ones cost a first call their compiles. 16-bit
    dots pass "ieee" too, which tl.dot ignores for them: they keep every config (on operands
    the persistent kernel cannot take, 128-row tiles ran 1.1 to 1.6 times faster, item 252)."""
    exact = kwargs.get("INPUT_PRECISION", named_args.get("INPUT_PRECISION")) == "ieee"
    if not exact or named_args["a_ptr"].dtype not in (torch.float32, torch.float64):
        return configs
    small = [c for c in configs if c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] <= 64 * 64]
    return small or configs


@common.op_autotune(
    lesson.CONFIGS,
    key=["M_BUCKET", "N", "K_BUCKET", "stride_ak", "stride_bn", "INPUT_PRECISION"],
    prune=exact_tiles,
)
@triton.jit
def bucketed_matmul_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
    stride_cm, stride_cn,
    M_BUCKET, K_BUCKET,  # the key's: M and K in buckets (buckets_of), never read
    INPUT_PRECISION: tl.constexpr, ACTIVATION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    fused_matmul_kernel(
        a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
        stride_cm, stride_cn, INPUT_PRECISION, ACTIVATION, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
    )  # fmt: skip


def validate(a, b, bias=None, activation=None):
    """(M, N, K), or a TypeError or ValueError naming why matmul cannot run."""
    inputs = {"a": a, "b": b} if bias is None else {"a": a, "b": b, "bias": bias}
    for arg, t in inputs.items():
        if not isinstance(t, torch.Tensor) or t.dtype not in DTYPES:
            got = f"dtype {t.dtype}" if isinstance(t, torch.Tensor) else type(t).__name__
            names = ", ".join(str(dtype).removeprefix("torch.") for dtype in DTYPES)
            raise TypeError(f"matmul: {arg} must be a tensor of {names}, got {got}")
        if t.dim() != (dims := 1 if arg == "bias" else 2):
            raise ValueError(f"matmul: {arg} must be {dims}-D, got shape {tuple(t.shape)}")
    if len({t.dtype for t in inputs.values()}) > 1:
        dtypes = ", ".join(f"{arg} {t.dtype}" for arg, t in inputs.items())
        raise TypeError(f"matmul: the inputs must have one dtype, got {dtypes}")
    common.refuse_negated(**inputs)
    if len({t.device for t in inputs.values()}) > 1 or a.device.type != common.DEVICE.type:
        where = ", ".join(f"{arg} is on {t.device}" for arg, t in inputs.items())
        raise ValueError(f"matmul: {where}; expected one {common.DEVICE.type}")
    if a.shape[1] != b.shape[0]:
        shapes = f"a {tuple(a.shape)} and b {tuple(b.shape)}"
        raise ValueError(f"matmul: {shapes} do not chain: {a.shape[1]} != {b.shape[0]}")
    if bias is not None and bias.shape[0] != b.shape[1]:
        raise ValueError(f"matmul: bias has shape {tuple(bias.shape)}, expected ({b.shape[1]},)")
    if activation not in ACTIVATIONS:
        raise ValueError(f"matmul: activation must be one of {ACTIVATIONS}, got {activation!r}")
    return a.shape[0], b.shape[1], a.shape[1]


def pick(a, b, c):
    """The lesson's kernel that computes c = a @ b fastest: "persistent" for 16-bit and TF32 dots
    that descriptors can take, unless M <= 128 (one row of 128-row tiles: the fused kernel's
    smaller tiles win, results/NOTES.md items 43 and 60), or "stream_k" for 16-bit ones whose
    tiles leave the persistent kernel's SMs idle (stream_k_pays); else "fused"."""
    half = c.dtype in (torch.float16, torch.bfloat16)
    fast_dot = half or fused.input_precision(c.dtype) == "tf32"
    if not fast_dot or a.shape[0] <= 128:
        return "fused"
    if persistent.persistent_problem(a, b, c) is not None:
        return "fused"
    (m, k), n = a.shape, b.shape[1]
    return (
        "stream_k" if half and stream_k_pays(m, n, k, common.sm_count(c.device)) else "persistent"
    )


# Stream-K (stream_k.py) splits the K loop between programs, so that every SM works to the end.
# It pays where the persistent kernel's tiles leave SMs idle: d = 768's weight gradients, 72
# tiles of 128 x 256 on 132 SMs, ran at 0.79 to 0.83 of cuBLAS's speed against 0.60 to 0.66;
# where tiles kept 97% of the SMs busy it lost, 0.73 to 0.86 against 0.93 to 0.96 (H200,
# results/NOTES.md item 180). Its float32 partials and flags cost a few microseconds, so a
# short K (few steps to spread) stays with the persistent kernel.
STREAM_K_BUSY_BELOW = 0.75  # the persistent kernel's busy share under which stream-K runs
STREAM_K_MIN_K = 1024


def stream_k_pays(m, n, k, programs):
    """Whether stream-K beats the persistent kernel on C (m, n) with k: the persistent kernel's
    best tile width keeps under STREAM_K_BUSY_BELOW of its program turns busy."""
    if k < STREAM_K_MIN_K:
        return False
    busy = max(persistent.busy_share(m, n, programs, width) for width in (128, 256))
    return busy < STREAM_K_BUSY_BELOW


# The persistent kernel's kinds of product (what Triton compiles it for, but for the sizes and
# the tile's width) whose two widths are compiled. Its rule picks the width from M, so a new token
# count may switch it, and the other width's first launch would compile it: 0.3 s in a training
# step (results/NOTES.md item 129). So the first launch of each kind compiles both.
COMPILED_BOTH_WIDTHS = set()


def compile_both_widths(kernel, rules, args):
    """Compiles kernel (the persistent kernel, its heuristics' `rules` applied to `args`) at both
    tile widths: Triton's warmup() compiles a launch without running it."""
    for width in (128, 256):
        config = dict(args)
        for name, rule in rules.items():  # BLOCK_N first: the later rules read it
            config[name] = width if name == "BLOCK_N" else rule(config)
        kernel.warmup(**config, grid=(1,))


# The fused kernel's kinds of product (its tuning key, the strides, dtype, device, bias and
# epilogue) whose pick is compiled for every class of M and K. Triton compiles a kernel again
# for an int that is 1, a multiple of 16 or neither, and a new token count may move M (or K,
# in a weight gradient) to another class: 0.4 to 0.9 s in the middle of a run (results/NOTES.md
# item 168). So the first launch of each kind compiles its pick for all six.
COMPILED_EVERY_CLASS = set()


def compile_every_class(kernel, args, consts):
    """Compiles the config that the autotuned `kernel` picked at its last launch (best_config)
    with M in (1, 16, 17) and K in (16, 17): the classes Triton specializes an int on. Triton's
    warmup() compiles without running (a no-op under the interpreter); loaded() does the rest of
    a first launch's work."""
    config = consts | kernel.best_config.all_kwargs()
    for m, k in itertools.product((1, 16, 17), (16, 17)):
        loaded(kernel.fn.warmup(*args[:4], m, args[5], k, *args[7:], **config, grid=(1,)))


def loaded(compiled):
    """Loads a kernel that warmup() compiled onto the GPU, and builds its launcher, as its first
    launch would: a compiled kernel indexed by a grid does both, and launches nothing. Triton
    writes a launcher in C for each kind of signature; an int argument of 1 (M = 1, decoding one
    token) makes a new kind, and its C compile took 310 ms at a first call (NOTES item 175)."""
    if compiled is None:  # the interpreter compiles nothing
        return
    if hasattr(compiled, "result"):  # Triton may compile asynchronously
        compiled = compiled.result()
    compiled[(1, 1, 1)]


# The fused kernel's buckets: every M up to SMALL_M shares a pick, and every larger M another;
# K one a power of 2, but in exact float32 and float64 one bucket for all K. M bucketed by powers
# of 2, each new token count past a power of 2 was a tuning at its first call: 0.3 to 8 s for
# small M (results/NOTES.md item 170), 0.28 to 0.77 s in exact float32 at 256 to 32768 tokens,
# where every bucket of M picked one config in d = 768's two forward products but for M = 256
# (item 188). A weight gradient's K is its token count: in exact float32 and in float64 every
# bucket of K picked that config too, and a K not a multiple of 16 in a new bucket tuned for 31 s
# (float32) or 8 s (float64), compiling every config for it (items 192, 194). 16-bit products
# keep K's powers of 2: there the fused kernel runs M <= 128 (pick), whose K is a model's width,
# not its token count, and rows the persistent kernel cannot take (a width such as 1001), whose
# weight gradients tune again at each new power of 2 of tokens.
SMALL_M, LARGE_M = 128, 1024
EVERY_K = 0  # exact float32's and float64's one bucket of K


def buckets_of(m, k, dtype, precision):
    """(M_BUCKET, K_BUCKET): M and K as the fused kernel's tuning key holds them, for C's dtype
    and tl.dot's input_precision."""
    m_bucket = SMALL_M if m <= SMALL_M else LARGE_M
    if dtype in (torch.float32, torch.float64) and precision == "ieee":
        return m_bucket, EVERY_K
    return m_bucket, common.next_power_of_2(int(k))


def tune_bucket(a, b, into, bias, consts, buckets):
    """Tunes the fused kernel for a's bucket of M at M = the bucket's (SMALL_M or LARGE_M): a
    launch into scratch rows before the first launch of a kind whose M is less. Tuned at the
    first M that came, the pick would depend on it: tuned at M = 1, M = 128 ran 1.6 times slower
    (results/NOTES.md item 168). Takes A with rows of K (stride_ak 1, a key of the tuning), and
    the launch's (M_BUCKET, K_BUCKET). Its caller holds launch.THROUGH_TRITON."""
    if common.INTERPRETED:  # the interpreter's autotuner holds one config: nothing to tune
        return
    (k, n), (rows, k_bucket) = b.shape, buckets
    scratch_a, scratch_c = a.new_empty((rows, k)).normal_(), into.new_empty((rows, n))
    strides = (*scratch_a.stride(), *b.stride(), *scratch_c.stride())
    bucketed_matmul_kernel[lesson.tile_grid(rows, n)](
        scratch_a, b, scratch_c, bias, rows, n, k, *strides, rows, k_bucket, **consts
    )


# launch()'s plans (common.kept_plan: what a plan is; here the kernel, the operands' views, the
# heuristics and the arguments), one for each layout: keyed by plan_key(), all that decides the
# kernels and their arguments but the tensors' addresses. A first call launches as it plans, so
# launch() keeps its plans itself.
PLANS = {}


def plan_key(a, b, c, bias, pre, activation):
    """common.layout of a, b and c, torch's float32 matmul precision, the epilogue, and bias's
    and pre's alignment and strides."""
    ends = [None if t is None else (t.data_ptr() % 16, t.stride()) for t in (bias, pre)]
    layouts = (*common.layout(a), *common.layout(b), *common.layout(c))
    return (*layouts, torch.get_float32_matmul_precision(), activation, *ends)


def launch(a, b, c, bias=None, pre=None, activation=None, in_op=False, key=None):
    """c = activation(a @ b + bias) by the kernel pick() names, written into c; P = a @ b + bias
    into pre where given. For validated inputs with c.numel() > 0. in_op: from a registered op's
    body (common.traceable), which torch.compile traces: planned each call, as a plan there
    would outlive the traced tensors. key: the caller's plan_key, where it knows one."""
    if in_op:
        first_launch(a, b, c, bias, pre, activation, in_op=True)
        return
    key = key or plan_key(a, b, c, bias, pre, activation)
    if (plan := PLANS.get(key)) is not None:
        plan(*common.dot_inputs(a, b), c, bias, pre)  # (as first_launch)
        return
    if len(PLANS) >= common.PLANS_KEPT:
        PLANS.clear()
    PLANS[key] = first_launch(a, b, c, bias, pre, activation, key=key)


def first_launch(a, b, c, bias, pre, activation, in_op=False, key=None):
    """launch()'s first call of a layout: launches, and returns its plan, a function of (a, b,
    c, bias, pre) that launches the same for tensors of that layout. key: the layout's
    plan_key, the Launcher's kind for its launches (launch.Named)."""
    kernel = pick(a, b, c)  # of the tensors as given, as on a GPU
    a, b = common.dot_inputs(a, b)  # bfloat16 as float32 under the interpreter
    if kernel == "stream_k" and pre is None:  # (stream_k.py's kernel keeps no P)
        return first_stream_k_launch(a, b, c, bias, activation, in_op, key)
    if kernel in ("persistent", "stream_k"):
        return first_persistent_launch(a, b, c, bias, pre, activation, in_op, key)
    return first_fused_launch(a, b, c, bias, pre, activation, in_op, key)


def first_persistent_launch(a, b, c, bias, pre, activation, in_op, key):
    (m, k), n = a.shape, b.shape[1]
    precision = fused.input_precision(c.dtype)
    if precision == "tf32":  # as persistent.persistent_operands, with traceable copies
        a_t, b_t = False, True

        def operands(a, b):  # A as rows of K; B as B^T, whose rows are B's columns
            transpose = common.traceable(persistent.transpose_kernel, in_op)
            a = persistent.rows_contiguous(a, kernel=transpose)
            return a, persistent.rows_contiguous(b.T, kernel=transpose)
    else:
        a_t, b_t = persistent.transposed(a), persistent.transposed(b)

        def operands(a, b):
            return (a.T if a_t else a), (b.T if b_t else b)

    a_arg, b_arg = operands(a, b)
    programs = common.sm_count(a.device)
    rules_kernel = persistent.persistent_matmul_kernel  # its @triton.heuristics applied here
    persistent_kernel, args = common.heuristics_applied(rules_kernel, dict(
        a_ptr=a_arg, b_ptr=b_arg, c_ptr=c, bias_ptr=bias, pre_ptr=pre, M=m, N=n, K=k,
        stride_a=a_arg.stride(0), stride_b=b_arg.stride(0), stride_cm=c.stride(0),
        PROGRAMS=programs, A_TRANSPOSED=a_t, B_TRANSPOSED=b_t,
        INPUT_PRECISION=precision, ACTIVATION=activation,
    ))  # fmt: skip
    kind = (a_arg.dtype, c.dtype, c.device, a_t, b_t, precision, activation)
    kind += (bias is None, pre is None)
    if not in_op and kind not in COMPILED_BOTH_WIDTHS:  # (torch.compile compiles its own)
        compile_both_widths(persistent_kernel, rules_kernel.values, args)
        COMPILED_BOTH_WIDTHS.add(kind)
    tensors = ("a_ptr", "b_ptr", "c_ptr", "bias_ptr", "pre_ptr")
    rest = {name: value for name, value in args.items() if name not in tensors}

    def launch_operands(a_arg, b_arg, c, bias, pre):
        common.set_descriptor_allocator()
        kernel = common.traceable(persistent_kernel, in_op, key)
        kernel[(programs,)](a_arg, b_arg, c, bias, pre, **rest)

    launch_operands(a_arg, b_arg, c, bias, pre)
    return lambda a, b, c, bias, pre: launch_operands(*operands(a, b), c, bias, pre)


def first_stream_k_launch(a, b, c, bias, activation, in_op, key):
    """As stream_k.matmul_stream_k launches it, for 16-bit a and b."""
    (m, k), n = a.shape, b.shape[1]
    a_t, b_t = persistent.transposed(a), persistent.transposed(b)
    programs = common.sm_count(a.device)
    stages = 5  # (16-bit C: stream_k.py's choice)
    rest = dict(
        M=m, N=n, K=k, PROGRAMS=programs, A_TRANSPOSED=a_t, B_TRANSPOSED=b_t,
        INPUT_PRECISION=fused.input_precision(c.dtype), ACTIVATION=activation,
        BLOCK_M=128, BLOCK_N=128, BLOCK_K=128 // a.element_size(),
        GROUP_M=1 if m > n else 8, num_warps=8, num_stages=stages,
    )  # fmt: skip

    def launch_operands(a, b, c, bias):
        a_arg, b_arg = (a.T if a_t else a), (b.T if b_t else b)
        strides = dict(stride_a=a_arg.stride(0), stride_b=b_arg.stride(0), stride_cm=c.stride(0))
        partials = torch.empty((programs, 128, 128), dtype=torch.float32, device=c.device)
        flags = stream_k_flags(programs, c.device, in_op)
        common.set_descriptor_allocator()
        kernel = common.traceable(stream_k.stream_k_kernel, in_op, key)
        kernel[(programs,)](a_arg, b_arg, c, bias, partials, flags, **strides, **rest)

    launch_operands(a, b, c, bias)
    return lambda a, b, c, bias, pre: launch_operands(a, b, c, bias)


# Stream-K's flags start at 0, and its kernel leaves them at 0: each owner sets back the flags it
# waits for (stream_k.py's (fixup)). So a call may reuse the flags of any call it cannot overlap:
# one on the same CUDA stream, whose work runs in turn. New flags, a tensor of zeros, are a launch
# of their own: on an H200 they cost a small product 15 us of the host and d = 768's weight
# gradients 1 to 2 us of the GPU (results/NOTES.md item 205).
KEPT_FLAGS = {}  # (device, stream) -> int32 flags, all 0 between calls
STREAMS_KEPT = 64  # streams whose flags are kept: past that, forgotten and made again


def stream_k_flags(programs, device, in_op):
    """programs int32 zeros for a stream-K launch on the current stream: kept ones, but new ones
    in a registered op's body (torch.compile traces it) and while a CUDA graph captures (a fill
    captured there runs only when the graph is replayed: kept, it would leave garbage)."""
    cuda = device.type == "cuda"
    if in_op or (cuda and torch.cuda.is_current_stream_capturing()):
        return torch.zeros(programs, dtype=torch.int32, device=device)
    # keyed by the stream the kernel is launched on: the current device's current stream
    key = (device, torch.cuda.current_stream().cuda_stream if cuda else None)
    if (flags := KEPT_FLAGS.get(key)) is None or len(flags) < programs:
        if len(KEPT_FLAGS) >= STREAMS_KEPT:
            KEPT_FLAGS.clear()
        KEPT_FLAGS[key] = flags = torch.zeros(programs, dtype=torch.int32, device=device)
    return flags


def first_fused_launch(a, b, c, bias, pre, activation, in_op, key):
    (m, k), n = a.shape, b.shape[1]
    precision = fused.input_precision(c.dtype)
    # exact float32 reads a row-major B faster (NOTES 60, 63)
    copy_b = c.dtype == torch.float32 and precision == "ieee" and persistent.transposed(b)

    def operand_b(b):
        if not copy_b:
            return b
        transpose = common.traceable(persistent.transpose_kernel, in_op)
        return persistent.rows_contiguous(b, kernel=transpose)

    b = operand_b(b)
    # The tuning key's M_BUCKET, K_BUCKET (a size torch.compile traces is fixed to its value).
    buckets = buckets_of(m, k, c.dtype, precision)
    # The lesson's kernel keeps no P: where P is asked for, it computes P, then torch the GELU.
    into, launched = (c, activation) if pre is None else (pre, None)
    # lesson.tile_grid's grid, by common.cdiv (a host microsecond or two less a call)
    grid = lambda meta: (common.cdiv(m, meta["BLOCK_M"]) * common.cdiv(n, meta["BLOCK_N"]),)  # noqa: E731
    sizes = (m, n, k, *a.stride(), *b.stride(), *into.stride(), *buckets)
    consts = dict(INPUT_PRECISION=precision, ACTIVATION=launched)
    first_of_kind = False
    if not in_op:  # (torch.compile tunes and compiles its own)
        kind = (*buckets, n, a.stride(), b.stride(), into.stride(), c.dtype, c.device)
        kind += (bias is None, precision, launched)
        first_of_kind = kind not in COMPILED_EVERY_CLASS

    def launch_operands(a, b, c, bias, pre):
        into = c if pre is None else pre
        kernel = common.traceable(bucketed_matmul_kernel, in_op, key)
        kernel[grid](a, b, into, bias, *sizes, **consts)
        if pre is not None:
            torch.ops.aten.gelu.out(pre, approximate="tanh", out=c)

    if not first_of_kind:
        launch_operands(a, b, c, bias, pre)
    else:  # one thread at a time: the autotuner keeps its pick, which compile_every_class reads
        with common.launch.THROUGH_TRITON:
            if m < buckets[0] and a.stride(1) == 1:
                tune_bucket(a, b, into, bias, consts, buckets)
            launch_operands(a, b, c, bias, pre)
            compile_every_class(bucketed_matmul_kernel, (a, b, into, bias, *sizes), consts)
            COMPILED_EVERY_CLASS.add(kind)
    return lambda a, b, c, bias, pre: launch_operands(a, operand_b(b), c, bias, pre)


def forward(a, b, bias=None, activation=None, out=None, keep_pre=False, in_op=False):
    """(C, P): C = activation(a @ b + bias), in out where given (a new tensor if out overlaps an
    input: common.write_out then copies it); P = a @ b + bias where keep_pre and an activation
    ask for it, else None. No autograd. Validates at the first call of a layout. in_op: as
    launch's."""
    if in_op:
        planned = plan_forward(a, b, bias, activation, in_op=True)
    else:
        planned = kept_forward_plan(a, b, bias, activation)
    return planned(a, b, bias, out, keep_pre)


# forward()'s plans (common.kept_plan: what a plan is; here the checks and the output's shape),
# one for each layout of a, b and bias, activation and float32 matmul precision. A later call
# skips validate() and plan_key(), which had cost the host more than the key (NOTES item 201).
FORWARD_PLANS = {}


def kept_forward_plan(a, b, bias, activation):
    """forward()'s plan for these inputs: made, and the inputs validated, at their layouts'
    first call."""
    key = common.checked_key(forward_key, validate, a, b, bias, activation)
    return common.kept_plan(FORWARD_PLANS, key, plan_forward, a, b, bias, activation)


def forward_key(a, b, bias, activation):
    """The layouts of a, b and bias, the activation by its index (one no dict could key, a list,
    raises ValueError here), and torch's float32 matmul precision."""
    ends = None if bias is None else common.layout(bias)
    key = (*common.layout(a), *common.layout(b), ends, ACTIVATIONS.index(activation))
    return (*key, torch.get_float32_matmul_precision())


def plan_forward(a, b, bias, activation, in_op=False, key=None):
    """A function of (a, b, bias, out=None, keep_pre=False) of these layouts that returns
    forward()'s (C, P). Raises validate()'s errors. key: the layouts' key. (key, whether P is
    None) is launch()'s plan_key for a new C, whose layout follows from a's and b's."""
    m, n, _ = validate(a, b, bias, activation)

    def planned(a, b, bias, out=None, keep_pre=False):
        inputs = (a, b) if bias is None else (a, b, bias)
        c = common.kernel_out(out, (m, n), inputs)
        pre = a.new_empty((m, n)) if keep_pre and activation else None
        bias = None if bias is None else bias.contiguous()  # the kernels read bias_ptr + column
        if c.numel():  # (K = 0: the fused kernel stores sums of no products, with the epilogue)
            new_c = key is not None and c is not out
            launch_key = (key, pre is None) if new_c else None
            launch(a, b, c, bias, pre, activation, in_op, launch_key)
        return c, pre

    return planned


def gradients(a, b, bias, pre, grad_c, activation, needs_input_grad, through_op=False):
    """(grad_a, grad_b, grad_bias) of C = activation(a @ b + bias), None where not needed, by
    matmul, which autograd records under create_graph=True (second derivatives). P is computed
    again where it is None, or where autograd records, so that it records P too. through_op:
    by the registered op instead, which torch.compile records."""
    product = matmul_op if through_op else matmul
    if activation:
        # P again where autograd records (create_graph=True) or forward mode wants its tangent
        if pre is None or torch.is_grad_enabled() or common.dual_level_open():
            pre = product(a, b, bias=bias)
        grad_c = torch.ops.aten.gelu_backward(grad_c, pre, approximate="tanh")
        # Compiled, Inductor would compute this gradient twice: written for the products, and
        # again inside bias's sum. Its as_strided writes it once, and the sum reads that copy.
        # (The registered op's backward is traced with is_compiling() False: through_op.)
        if through_op or torch.compiler.is_compiling():
            grad_c = grad_c.as_strided(grad_c.shape, grad_c.stride())
    grad_a = product(grad_c, b.T) if needs_input_grad[0] else None
    grad_b = product(a.T, grad_c) if needs_input_grad[1] else None
    grad_bias = grad_c.sum(0) if needs_input_grad[2] else None
    return grad_a, grad_b, grad_bias


class Matmul(torch.autograd.Function):
    """The lesson's Function, with a bias and an activation, P kept for the backward, and a
    backward that records second derivatives."""

    @staticmethod
    def forward(ctx, a, b, bias, activation, planned):
        if planned is None:  # torch.compile records the op, not the launch
            c, pre = matmul_with_pre_op(a, b, bias, activation)
        else:  # kept_forward_plan's
            c, pre = planned(a, b, bias, keep_pre=True)
        ctx.activation = activation
        ctx.save_for_backward(a, b, bias, pre)
        ctx.save_for_forward(a, b, bias, pre)  # (MatmulForwardMode's)
        return c

    @staticmethod
    def backward(ctx, grad_c):
        a, b, bias, pre = ctx.saved_tensors
        grads = gradients(a, b, bias, pre, grad_c, ctx.activation, ctx.needs_input_grad)
        return (*grads, None, None)


class MatmulForwardMode(Matmul):
    """Matmul with a jvp, for forward-mode AD (common.dual_level_open). Matmul itself has none:
    torch.compile's Dynamo does not trace a Function that defines one."""

    @staticmethod
    def jvp(ctx, tangent_a, tangent_b, tangent_bias, *_):
        a, b, bias, pre = ctx.saved_tensors
        tangent = common.sum_present(  # P's: da @ b + a @ db + dbias, by matmul (recorded)
            None if tangent_a is None else matmul(tangent_a, b),
            None if tangent_b is None else matmul(a, tangent_b),
            None if tangent_bias is None else tangent_bias.expand(a.shape[0], b.shape[1]),
        )
        if ctx.activation:  # C's: the activation's slope at P times P's tangent
            if torch.is_grad_enabled():  # P recorded too, for a gradient of the tangent
                pre = matmul(a, b, bias)
            tangent = torch.ops.aten.gelu_backward(tangent, pre, approximate="tanh")
        return tangent


def matmul(a, b, bias=None, activation=None, *, out=None):
    """activation(a @ b + bias) for a (M, K), b (K, N), bias (N,) or None of one float dtype and
    any strides, float32 as torch's matmul precision says (TF32 unless "highest"):
    differentiable twice and compilable, or written into out (refused while an input requires
    grad, as PyTorch's out= is)."""
    if not torch.compiler.is_compiling():  # (eager: below)
        return eager(a, b, bias, activation, out)
    # The op has no jvp: in a dual level Dynamo runs this call eagerly (a graph break).
    if torch.compiler.is_dynamo_compiling() and common.dual_level_open():
        return eager.untraced(a, b, bias, activation, out)
    validate(a, b, bias, activation)
    return common.write_out(Matmul.apply(a, b, bias, activation, None), out)


def matmul_eagerly(a, b, bias, activation, out=None):  # the entry's eager path
    planned = kept_forward_plan(a, b, bias, activation)  # validates a layout's first call
    grads = a.requires_grad or b.requires_grad or (bias is not None and bias.requires_grad)
    if out is None and common.dual_level_open():  # forward mode: tangents pass through its jvp
        return MatmulForwardMode.apply(a, b, bias, activation, planned)
    if out is None and grads and torch.is_grad_enabled():
        return Matmul.apply(a, b, bias, activation, planned)
    return common.write_out(planned(a, b, bias, out)[0], out)  # out's version bumped


# The entry's eager path: traced by no torch.compile (common.eager_path says why and how)
eager = common.eager_path(matmul_eagerly)


# The registered ops (common.register_op: which kind of op, and why). A fake gives the outputs'
# shapes without a kernel, and validates as matmul does. torch.ops.triton_lessons.matmul returns
# C, as matmul does; its backward computes P again where there is an activation. matmul_with_pre
# returns P too (an empty tensor without an activation: an op returns tensors, never None), for
# Matmul.
@common.register_op("triton_lessons::matmul")
def matmul_op(
    a: Tensor, b: Tensor, bias: Tensor | None = None, activation: str | None = None
) -> Tensor:
    return forward(a, b, bias, activation, in_op=True)[0]  # validates


@matmul_op.register_fake
def _(a, b, bias=None, activation=None):
    m, n, _ = validate(a, b, bias, activation)
    return a.new_empty((m, n))


def op_setup_context(ctx, inputs, output):
    a, b, bias, activation = inputs
    ctx.activation = activation
    ctx.save_for_backward(a, b, bias)


def op_backward(ctx, grad_c):  # P is computed again, where an activation needs it
    a, b, bias = ctx.saved_tensors
    needs = (*ctx.needs_input_grad, False, False)[:3]  # (the op may be called without bias)
    grads = gradients(a, b, bias, None, grad_c, ctx.activation, needs, through_op=True)
    return (*grads, None)


matmul_op.register_autograd(op_backward, setup_context=op_setup_context)


@common.register_op("triton_lessons::matmul_with_pre")
def matmul_with_pre_op(
    a: Tensor, b: Tensor, bias: Tensor | None = None, activation: str | None = None
) -> tuple[Tensor, Tensor]:
    c, pre = forward(a, b, bias, activation, keep_pre=True, in_op=True)  # validates
    return c, (c.new_empty(0) if pre is None else pre)


@matmul_with_pre_op.register_fake
def _(a, b, bias=None, activation=None):
    m, n, _ = validate(a, b, bias, activation)
    return a.new_empty((m, n)), a.new_empty((m, n) if activation else (0,))


if __name__ == "__main__":  # python 02_matmul_tiled/op.py: the op checked on this machine
    calls = {"matmul": matmul, "torch.ops.triton_lessons.matmul": torch.ops.triton_lessons.matmul}
    # Each case's additions: in C's values (K, and the bias), in a's gradient (N), b's and the
    # bias's (M). The first takes the fused kernel; on a GPU, the second takes stream-K in 16
    # bits (a few tiles, a long K) and the persistent kernel for its gradients.
    cases = [
        (lambda t: (t(17, 1000), t(33, 1000).T, t(33)), (1001, 33, 17, 17)),
        (lambda t: (t(256, 1024), t(1024, 256), t(256)), (1025, 256, 256, 256)),
    ]
    sys.exit(common.check_op(__doc__, calls, lambda a, b, bias: a @ b + bias, cases))
