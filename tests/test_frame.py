"""What every lesson promises (CONTRIBUTING.md), and the shared helpers in common/."""

import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import traceback
import types
import warnings
from pathlib import Path

import pytest
import torch

import support
from support import common
import triton  # after support, whose import of common may switch on the interpreter
import triton.language as tl
from functorch.compile import make_boxed_func
from torch._dynamo import compiled_autograd
from torch._dynamo.backends.common import aot_autograd
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.autograd import forward_ad
from common import launch
from tools import example_paths, host, layouts, train_step

EXAMPLES = [path.parent.name for path in example_paths()]
VARIANT_STYLES = {
    "01_matmul_elementwise": set(),
    "02_matmul_tiled": {"simple", "tuned"},  # fused.py adds "fused", persistent.py "persistent"
    "03_blocked_sum": {"simple", "tuned", "block_ptr"},  # block_ptr: in block_ptr.py
    "04_weighted_sum": {"simple", "tuned"},
}


def test_all_four_lessons_exist():
    assert EXAMPLES == list(VARIANT_STYLES)


# Each op.py's entry and the op it registers, by name.
ENTRIES = {
    "01_matmul_elementwise": "matmul_elementwise",
    "02_matmul_tiled": "matmul",
    "03_blocked_sum": "blocked_sum",
    "04_weighted_sum": "weighted_sum",
}


# The folders whose op has moved out of the lesson into op.py beside it (issue 41).
SPLIT = [f for f in EXAMPLES if (support.REPO_ROOT / f / "op.py").exists()]


def entry_module(folder):  # where the entry function lives: op.py, or main.py before the split
    return support.load_op(folder) if folder in SPLIT else support.load(folder)


def test_the_split_has_begun():
    assert "01_matmul_elementwise" in SPLIT


@pytest.mark.parametrize("folder", EXAMPLES)
def test_public_surface(folder):
    example = support.load(folder)
    for name in ("VARIANTS", "reference", "check", "benchmark", "SWEEP", "main"):
        assert hasattr(example, name), f"{folder}/main.py has no {name}"
    assert hasattr(entry_module(folder), ENTRIES[folder]), f"{folder} has no {ENTRIES[folder]}"
    # A variant is a callable, or (04) a pair of wrappers: forward and backward.
    variants = [
        fn for v in example.VARIANTS.values() for fn in (v if isinstance(v, tuple) else [v])
    ]
    assert example.VARIANTS and all(callable(fn) for fn in variants)
    assert not set(example.VARIANTS) & set(getattr(example, "UNAVAILABLE", {}))
    assert example.SWEEP and all(isinstance(case, dict) for case in example.SWEEP)


@pytest.mark.parametrize("folder", EXAMPLES)
def test_entry_is_a_registered_op(folder):
    entry_module(folder)
    assert hasattr(torch.ops.triton_lessons, ENTRIES[folder]), (
        f"torch.ops.triton_lessons.{ENTRIES[folder]} is missing"
    )


# A registered op of each lesson, with inputs (03's x tall enough to split: two kernels).
TRACEABLE_OPS = {
    "01_matmul_elementwise": ("matmul_elementwise", lambda t: (t(8, 8), t(8, 8))),
    "02_matmul_tiled": ("matmul", lambda t: (t(256, 64), t(64, 32), t(32), "gelu_tanh")),
    "03_blocked_sum": ("blocked_sum", lambda t: (t(2000, 24), "tuned")),
    "04_weighted_sum": ("weighted_sum", lambda t: (t(40, 24), t(24), "tuned")),
}


@pytest.mark.parametrize("folder", list(TRACEABLE_OPS))
def test_compiled_code_launches_the_ops_kernels_itself_on_a_gpu(folder):
    # On a GPU the op is a triton_op: torch.compile records its kernels and the compiled code
    # launches them, with no call of the op left. Under the interpreter a custom_op: one node of
    # the graph (no Inductor there: it would compile C++ on the CPU, for seconds).
    support.load_op(folder)
    name, make_inputs = TRACEABLE_OPS[folder]
    op = getattr(torch.ops.triton_lessons, name)

    def tensor(*shape):
        dtype = torch.float16 if support.ON_GPU else torch.float32
        return torch.randn(shape, device=common.DEVICE, dtype=dtype, requires_grad=True)

    inputs = make_inputs(tensor)

    def loss(*args):
        return op(*args).float().square().sum()

    if support.ON_GPU:
        compiled = torch.compile(loss)
        compiled(*inputs).backward()  # the first call compiles
        called = support.dispatched_ops(lambda: compiled(*inputs).backward())
        assert called == [], called
    else:  # the forward graph AOTAutograd hands a compiler keeps the op as one node
        targets = []

        def capture(graph_module, example_inputs):
            targets.extend(str(node.target) for node in graph_module.graph.nodes)
            return make_boxed_func(graph_module.forward)

        torch.compile(loss, backend=aot_autograd(fw_compiler=capture))(*inputs).backward()
        assert f"triton_lessons.{name}.default" in targets, targets


def run_as_users_script(script, folder, interpret=None):
    """script's stdout, run as user.py in folder, in a new process whose environment leaves the
    interpreter switch to the lessons (as a user's would), or sets it to `interpret`, after
    asserting that it succeeded."""
    (folder / "user.py").write_text(script)
    env = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    if interpret is not None:
        env["TRITON_INTERPRET"] = interpret
    done = subprocess.run(
        [sys.executable, "user.py"], cwd=folder, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("inside", [False, True], ids=["elsewhere", "inside_the_clone"])
def test_readme_snippet_loads_an_op_from_a_script_elsewhere(tmp_path, inside):
    """The README's snippet, run as a user's script in another directory that has modules of its
    own named common and tools: the op works, and the user's modules stay the user's. Inside the
    clone too: a user's common there had been taken for the repository's, and the op failed."""
    if inside:
        tmp_path = Path(tempfile.mkdtemp(prefix=".user-", dir=support.REPO_ROOT))
    try:
        _run_readme_snippet(tmp_path)
    finally:
        if inside:
            shutil.rmtree(tmp_path)


def _run_readme_snippet(tmp_path):
    readme = (support.REPO_ROOT / "README.md").read_text()
    snippet = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert "/path/to/this/repository/" in snippet
    snippet = snippet.replace("/path/to/this/repository", str(support.REPO_ROOT))
    (tmp_path / "common.py").write_text("MINE = 'common'\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("MINE = 'tools'\n")
    check = f"""
        import sys
        import torch
        a = torch.randn(3, 4, device=op.common.DEVICE, requires_grad=True)
        b = torch.randn(4, 2, device=op.common.DEVICE)
        c = op.matmul_elementwise(a, b)
        torch.testing.assert_close(c, a @ b)
        c.sum().backward()
        torch.testing.assert_close(a.grad, torch.ones_like(c) @ b.T)
        torch.testing.assert_close(torch.ops.triton_lessons.matmul_elementwise(a, b), a @ b)
        twice = lambda a, b: op.matmul_elementwise(a, b) * 2
        compiled = torch.compile(twice, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(compiled(a.detach(), b), (a @ b).detach() * 2)
        import common as common_now, tools as tools_now
        assert common_now is common and common.MINE == "common" and tools_now.MINE == "tools"
        assert {str(support.REPO_ROOT)!r} not in sys.path
        print("the snippet works")
    """
    script = "import common, tools\n" + snippet + textwrap.dedent(check)
    assert "the snippet works" in run_as_users_script(script, tmp_path)


# Each op called as a user's script would, after its own `import torch`: the entry, and what it
# must equal. On a CPU, an op.py that imported triton before its lesson's common set
# TRITON_INTERPRET=1 failed here: Triton's own @triton.jit helpers (tl.sum) ran uninterpreted.
OP_CALLS = {
    "01_matmul_elementwise": ("op.matmul_elementwise(a, b)", "a @ b"),
    "02_matmul_tiled": ("op.matmul(a, b)", "a @ b"),
    "03_blocked_sum": ("op.blocked_sum(a)", "a.sum(0)"),
    "04_weighted_sum": ("op.weighted_sum(a, b[:, 0])", "a @ b[:, 0]"),
}


@pytest.mark.parametrize("folder", list(OP_CALLS))
def test_every_op_runs_from_a_script_elsewhere(folder, tmp_path):
    call, expected = OP_CALLS[folder]
    with_out = call[:-1] + ", out=out)"
    path = str(support.REPO_ROOT / folder / "op.py")
    script = f"""
import importlib.util
import sys
import traceback
import torch

spec = importlib.util.spec_from_file_location("user_op", {path!r})
op = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = op  # as the README does: torch.compile looks the module up
spec.loader.exec_module(op)
a = torch.randn(37, 24, device=op.common.DEVICE)
b = torch.randn(24, 5, device=op.common.DEVICE)
torch.testing.assert_close({call}, {expected}, atol=1e-2, rtol=1e-2)
# a model's function that calls the entry, compiled whole
compiled = torch.compile(lambda a, b: {call} * 2, fullgraph=True, backend="aot_eager")
torch.testing.assert_close(compiled(a, b), ({expected}) * 2, atol=2e-2, rtol=1e-2)
# with out=, which the compiled entry checks and writes through common.write_out
into = torch.compile(lambda a, b, out: {with_out}, fullgraph=True, backend="aot_eager")
out = torch.full_like({expected}, float("nan"))
assert into(a, b, out) is out
torch.testing.assert_close(out, {expected}, atol=1e-2, rtol=1e-2)
wrong = torch.zeros(2, *out.shape, device=out.device)  # copy_ would broadcast into it
try:
    into(a, b, wrong)
except Exception as error:  # fullgraph: Dynamo's Unsupported, which names our ValueError
    said = "".join(traceback.format_exception(error))  # (torch 2.11: its format string)
    assert "check_out" in said and "out is " in said, said
else:
    raise AssertionError("a compiled call took an out of the wrong shape")
# Without fullgraph the error breaks the graph, and Dynamo traces the eager path's frames: there
# common.kernel_out read its module's globals, which Dynamo imports by the module's name, and
# "No module named 'common'" hid the ValueError
loose = torch.compile(lambda a, b, out: {with_out}, backend="aot_eager")
try:
    loose(a, b, wrong)
except ValueError as error:
    assert "out is " in str(error), error
else:
    raise AssertionError("a compiled call took an out of the wrong shape")
print("the op works")
"""
    assert "the op works" in run_as_users_script(script, tmp_path)


@pytest.mark.skipif(
    support.ON_GPU,
    reason="the interpreter is a CPU's (on the GPU image, Triton 3.6's fails with its numpy)",
)
@pytest.mark.parametrize("switch", ["true", "On"])
def test_the_interpreter_switch_is_read_as_triton_reads_it(switch, tmp_path):
    # Triton interprets for TRITON_INTERPRET=true (1, yes, on, y, any case), where common had
    # taken "1" alone: the ops took their GPU paths, and 02 to 04 failed inside Triton's timing.
    path = str(support.REPO_ROOT / "04_weighted_sum" / "op.py")
    script = f"""
import importlib.util
import torch

spec = importlib.util.spec_from_file_location("user_op", {path!r})
op = importlib.util.module_from_spec(spec)
spec.loader.exec_module(op)
x, w = torch.randn(9, 5), torch.randn(5)
assert op.common.INTERPRETED and op.common.DEVICE.type == "cpu"
torch.testing.assert_close(op.weighted_sum(x, w), x @ w)
print("interpreted")
"""
    assert "interpreted" in run_as_users_script(script, tmp_path, interpret=switch)


@pytest.mark.skipif(support.ON_GPU, reason="with CUDA, Triton's interpreter stays off")
def test_an_op_loaded_after_triton_says_what_to_do(tmp_path):
    # Without CUDA, Triton reads TRITON_INTERPRET as it is imported: after an `import triton`,
    # the kernels would fail with an error that names none of this, so loading an op refuses.
    path = str(support.REPO_ROOT / "03_blocked_sum" / "op.py")
    script = f"""
import importlib.util
import triton

spec = importlib.util.spec_from_file_location("user_op", {path!r})
try:
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
except ImportError as error:
    print(error)
"""
    said = run_as_users_script(script, tmp_path)
    assert "triton was imported before" in said and "TRITON_INTERPRET=1" in said


@pytest.mark.parametrize("folder", list(ENTRIES))
def test_an_entry_takes_its_ops_arguments_in_order_and_out_by_name(folder):
    # A call of torch.ops.triton_lessons.<name> works on the entry as written, argument for
    # argument; out= only by name, as PyTorch's ops take it, so that a tensor meant for another
    # argument is never written into (02's bias, given third by position, once was).
    entry = getattr(support.load_op(folder), ENTRIES[folder])
    schema = getattr(torch.ops.triton_lessons, ENTRIES[folder]).default._schema
    parameters = inspect.signature(entry).parameters.values()
    by_position = [p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert by_position == [argument.name for argument in schema.arguments]
    assert [p.name for p in parameters if p.kind is p.KEYWORD_ONLY] == ["out"]


# Each lesson's line budget (CONTRIBUTING.md).
BUDGETS = {
    "01_matmul_elementwise": 300,
    "02_matmul_tiled": 600,
    "03_blocked_sum": 400,
    "04_weighted_sum": 500,
}
OP_MACHINERY = ["custom_op", "triton_op", "register_", "def validate", "out=", "kernel_out"]


@pytest.mark.parametrize("folder", SPLIT)
def test_a_split_lesson_reads_as_a_lesson(folder):
    lines = (support.REPO_ROOT / folder / "main.py").read_text().splitlines()
    assert len(lines) <= BUDGETS[folder]
    widths = sorted(len(line) for line in lines if line.strip())
    assert widths[len(widths) // 2] <= 60, "median line over 60 characters"
    assert widths[-1] <= 100
    text = "\n".join(lines)
    assert not [word for word in OP_MACHINERY if word in text], "op machinery in the lesson"
    start = next(i for i, line in enumerate(lines) if line.startswith("def check("))
    after = next(i for i in range(start + 1, len(lines)) if lines[i][:1] not in ("", " ", ")"))
    last = max(i for i in range(start, after) if lines[i].strip())  # check()'s last line
    assert last + 1 <= 120, f"check() ends at line {last + 1}, after line 120"


LAST_PARTS = [
    "01_matmul_elementwise/any_x.py",
    "02_matmul_tiled/fused.py",
    "02_matmul_tiled/persistent.py",
    "02_matmul_tiled/stream_k.py",
    "03_blocked_sum/block_ptr.py",
    "03_blocked_sum/any_x.py",
    "04_weighted_sum/wide.py",
]


@pytest.mark.parametrize("part", LAST_PARTS)
def test_a_lessons_last_part_in_its_own_file_reads_as_a_lesson_too(part):
    # The lines of a lesson (no budget of its own), and no op machinery.
    lines = (support.REPO_ROOT / part).read_text().splitlines()
    widths = sorted(len(line) for line in lines if line.strip())
    assert widths[len(widths) // 2] <= 60 and widths[-1] <= 100
    text = "\n".join(lines)
    assert not [word for word in OP_MACHINERY if word in text], "op machinery in the lesson"


@pytest.mark.parametrize("folder", [f for f in EXAMPLES if VARIANT_STYLES[f]])
def test_every_style_is_a_variant(folder):
    assert VARIANT_STYLES[folder] - {"block_ptr"} <= set(support.load(folder).VARIANTS)
    assert "block_ptr" not in support.load(folder).VARIANTS  # only in block_ptr.py, where it runs


@pytest.mark.parametrize("folder", [f for f in EXAMPLES if "block_ptr" in VARIANT_STYLES[f]])
def test_block_ptr_is_listed_exactly_where_it_runs(folder):
    example = support.load_beside(folder, "block_ptr.py")
    problem = example.BLOCK_PTR_PROBLEM
    assert ("block_ptr" in example.VARIANTS) == (problem is None)
    assert example.UNAVAILABLE.get("block_ptr") == problem
    if tuple(int(part) for part in triton.__version__.split(".")[:2]) >= (3, 9):
        assert "does not run on triton" in problem  # Triton 3.9 removed block pointers


# A bad argument each entry's plan key trips on (no tensor, or an activation or style of none of
# its names), before validate() names it.
BAD_CALLS = {
    "01_matmul_elementwise": ("matmul_elementwise", ([[1.0]], torch.ones(1, 1)), {}),
    "02_matmul_tiled": ("matmul", (torch.ones(2, 2), torch.ones(2, 2)), dict(activation="gelu")),
    "03_blocked_sum": ("blocked_sum", (torch.ones(2, 2),), dict(style="nope")),
    "04_weighted_sum": ("weighted_sum", (torch.ones(2, 2), torch.ones(2)), dict(style="nope")),
}


@pytest.mark.parametrize("folder", list(BAD_CALLS))
def test_an_entrys_error_for_a_bad_argument_comes_alone(folder):
    # Raised inside the key's except clause, validate()'s error had been shown below a first one,
    # "tuple.index(x): x not in tuple", as "During handling of the above exception".
    name, args, kwargs = BAD_CALLS[folder]
    with pytest.raises((TypeError, ValueError)) as raised:
        getattr(support.load_op(folder), name)(*args, **kwargs)
    assert raised.value.__context__ is None, repr(raised.value.__context__)


@pytest.mark.parametrize("folder", list(BAD_CALLS))
def test_an_entry_names_a_tensor_its_kernels_cannot_read(folder):
    # Inside torch.func's vmap (or grad) a tensor has no storage, and a sparse one no strides: the
    # plan key tripped on either with PyTorch's "Cannot access data pointer of Tensor that doesn't
    # have storage". common.refuse_unreadable names each, and its error comes alone.
    name, bad_args, _ = BAD_CALLS[folder]
    entry = getattr(support.load_op(folder), name)
    x = torch.randn(4, 4, device=common.DEVICE)
    args = (x, x[0]) if folder == "04_weighted_sum" else (x, x)[: len(bad_args)]
    with pytest.raises(TypeError, match="inside torch.func's vmap or grad") as raised:
        torch.func.vmap(entry)(*(t.expand(3, *t.shape) for t in args))
    assert raised.value.__context__ is None, repr(raised.value.__context__)
    # 01's entry took its Function first, whose apply raised PyTorch's error about setup_context
    with pytest.raises(TypeError, match="inside torch.func's vmap or grad") as raised:
        torch.func.grad(lambda *t: entry(*t).sum())(*args)
    assert raised.value.__context__ is None, repr(raised.value.__context__)
    with pytest.raises(TypeError, match="a torch.sparse_coo tensor") as raised:
        entry(args[0].to_sparse(), *args[1:])
    assert raised.value.__context__ is None, repr(raised.value.__context__)
    # and where grad is wanted (01's entry named both as torch.func's tensors, for a while)
    with pytest.raises(TypeError, match="a torch.sparse_coo tensor"):
        entry(args[0].to_sparse().requires_grad_(), *args[1:])
    with pytest.raises(ValueError, match="meta"):
        entry(args[0].to("meta").requires_grad_(), *args[1:])


# Every registered op, and inputs it takes (its first a tensor that may be made sparse).
REGISTERED_OPS = {
    "matmul_elementwise": ("01_matmul_elementwise", lambda t: (t(3, 4), t(4, 2))),
    "matmul": ("02_matmul_tiled", lambda t: (t(3, 4), t(4, 2))),
    "matmul_with_pre": ("02_matmul_tiled", lambda t: (t(3, 4), t(4, 2), t(2), "gelu_tanh")),
    "blocked_sum": ("03_blocked_sum", lambda t: (t(3, 4),)),
    "weighted_sum": ("04_weighted_sum", lambda t: (t(3, 4), t(4))),
    "weighted_sum_backward": ("04_weighted_sum", lambda t: (t(3, 4), t(4), t(3))),
}


def test_every_registered_op_is_listed():
    for folder in EXAMPLES:
        support.load_op(folder)
    names = dir(torch.ops.triton_lessons)
    registered = {name for name in names if not name.startswith("_") and name != "name"}
    assert registered == set(REGISTERED_OPS)


@pytest.mark.parametrize("name", list(REGISTERED_OPS))
@pytest.mark.parametrize("layout", ["to_sparse", "to_sparse_csr"])
def test_a_registered_op_names_a_sparse_input(name, layout):
    # A sparse tensor reached the kernel launch, where PyTorch's "Cannot access storage of
    # SparseTensorImpl" (or "Sparse CSR tensors do not have strides") named neither the op nor
    # the input's kind.
    folder, inputs = REGISTERED_OPS[name]
    support.load_op(folder)
    args = inputs(lambda *shape: torch.randn(shape, device=common.DEVICE))
    sparse = getattr(args[0], layout)()
    with pytest.raises(TypeError, match=f"an input is a {sparse.layout} tensor"):
        getattr(torch.ops.triton_lessons, name)(sparse, *args[1:])


# Each entry on small float64 inputs, with the keywords the call needs, and PyTorch's answer.
def _gelu_tanh(p):
    return torch.nn.functional.gelu(p, approximate="tanh")


ENTRY_CALLS = {
    "01_matmul_elementwise": ("matmul_elementwise", [(3, 4), (4, 2)], {}, torch.matmul),
    "02_matmul_tiled": (
        "matmul", [(3, 4), (4, 2), (2,)], dict(activation="gelu_tanh"),
        lambda a, b, bias: _gelu_tanh(a @ b + bias),
    ),
    "03_blocked_sum": ("blocked_sum", [(5, 3)], {}, lambda x: x.sum(0)),
    "04_weighted_sum": ("weighted_sum", [(2, 3, 4), (4,)], {}, torch.matmul),
}  # fmt: skip


# A call of each entry that validate() refuses (a K that does not chain; 03's integer x): a
# compiled call, without fullgraph, raises the eager call's error. 01's compiled branch had left
# it to the registered op's fake tensors (Dynamo's TorchRuntimeError).
REFUSED_CALLS = {
    "01_matmul_elementwise": lambda t: (t(3, 4), t(5, 2)),
    "02_matmul_tiled": lambda t: (t(3, 4), t(5, 2)),
    "03_blocked_sum": lambda t: (t(3, 4).int(),),
    "04_weighted_sum": lambda t: (t(3, 4), t(5)),
}


@pytest.mark.parametrize("folder", list(REFUSED_CALLS))
def test_a_compiled_entry_raises_the_eager_entrys_error_and_runs_after_it(folder):
    # After the error Dynamo skips the frames that raised it, the entry's among them, from then
    # on: it ran the entry eagerly and traced each frame its eager path called, which failed
    # ("No module named 'common'"; on a GPU, an assert inside Dynamo at Triton's launch).
    entry = getattr(support.load_op(folder), ENTRIES[folder])
    args = REFUSED_CALLS[folder](lambda *shape: torch.randn(shape, device=common.DEVICE))
    with pytest.raises((TypeError, ValueError)) as eager:
        entry(*args)
    name, shapes, kwargs, reference = ENTRY_CALLS[folder]
    f64 = dict(dtype=torch.float64, device=common.DEVICE)
    torch._dynamo.reset()
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            compiled = torch.compile(lambda *t, **k: entry(*t, **k), backend="aot_eager")
            with pytest.raises(type(eager.value), match=re.escape(str(eager.value))):
                compiled(*args)
            for call in (compiled, torch.compile(entry, backend="aot_eager")):
                leaves = [torch.randn(shape, **f64, requires_grad=True) for shape in shapes]
                got = call(*leaves, **kwargs)
                torch.testing.assert_close(got, reference(*leaves))
                grads = torch.autograd.grad(got.sum(), leaves)
                wanted = torch.autograd.grad(reference(*leaves).sum(), leaves)
                for mine, theirs in zip(grads, wanted):
                    torch.testing.assert_close(mine, theirs)
        # Dynamo had compiled common.eager_path's wrapper too, and warned of Dynamo's hook
        assert not [w for w in warned if "does not know how to trace" in str(w.message)]
    finally:
        torch._dynamo.reset()  # (the skipped frames would stay skipped for the later tests)


@pytest.mark.parametrize("folder", list(ENTRY_CALLS))
def test_compiled_autograd_runs_the_backward_of_an_eager_call(folder):
    # Compiled autograd traces the backward of a call made eagerly: 04's launched its kernels
    # there, and Dynamo traced Triton's launch (an error from inside it, under the interpreter).
    name, shapes, kwargs, reference = ENTRY_CALLS[folder]
    entry = getattr(support.load_op(folder), name)
    f64 = dict(dtype=torch.float64, device=common.DEVICE, requires_grad=True)
    leaves = [torch.randn(shape, **f64) for shape in shapes]
    loss = entry(*leaves, **kwargs).sum()
    torch._dynamo.reset()
    try:
        with compiled_autograd._enable(torch.compile(backend="aot_eager")):
            loss.backward()
    finally:
        torch._dynamo.reset()
    wanted = torch.autograd.grad(reference(*leaves).sum(), leaves)
    for leaf, theirs in zip(leaves, wanted):
        torch.testing.assert_close(leaf.grad, theirs)


@pytest.mark.parametrize("folder", list(ENTRY_CALLS))
def test_an_entry_passes_forward_mode_tangents_on(folder):
    # Inside torch.autograd.forward_ad.dual_level, inputs that do not require grad skipped the
    # Function and its kernels dropped their tangents: the output had none, silently.
    name, shapes, kwargs, reference = ENTRY_CALLS[folder]
    entry = getattr(support.load_op(folder), name)
    f64 = dict(dtype=torch.float64, device=common.DEVICE)
    primals = [torch.randn(shape, **f64) for shape in shapes]
    tangents = [torch.randn(shape, **f64) for shape in shapes]
    for carrying in [{i} for i in range(len(shapes))] + [set(range(len(shapes)))]:
        with forward_ad.dual_level():

            def inputs():
                return [forward_ad.make_dual(p, t) if i in carrying else p
                        for i, (p, t) in enumerate(zip(primals, tangents))]  # fmt: skip

            got = forward_ad.unpack_dual(entry(*inputs(), **kwargs)).tangent
            want = forward_ad.unpack_dual(reference(*inputs())).tangent
        assert got is not None, carrying
        torch.testing.assert_close(got, want)
    leaves = [p.clone().requires_grad_() for p in primals]
    assert torch.autograd.gradcheck(lambda *t: entry(*t, **kwargs), leaves, check_forward_ad=True)
    # Reverse over forward (a loss on the tangent: the jvp's products are recorded), and forward
    # over reverse without create_graph (the backward passes tangents on too), as PyTorch's.
    got, want = (
        _both_ways(f, primals, tangents) for f in (lambda *t: entry(*t, **kwargs), reference)
    )
    for mine, theirs in zip(got, want):
        torch.testing.assert_close(mine, theirs)
    with forward_ad.dual_level():  # out= takes no tangent, nor holds one: refused, not dropped
        out = torch.empty_like(reference(*primals))
        dual = forward_ad.make_dual(primals[0], tangents[0])
        with pytest.raises(ValueError, match="forward-mode tangent"):
            entry(dual, *primals[1:], out=out, **kwargs)
        with pytest.raises(ValueError, match="forward-mode tangent"):
            entry(*primals, out=forward_ad.make_dual(out, torch.ones_like(out)), **kwargs)


@pytest.mark.parametrize("folder", list(ENTRY_CALLS))
def test_a_registered_op_refuses_forward_mode_rather_than_drop_the_tangent(folder):
    # PyTorch's custom ops take no jvp: inside a dual level the op's output carried no tangent,
    # silently. (Under torch.func.jvp the body cannot see the tangents: zero, as any custom op's.)
    name, shapes, kwargs, reference = ENTRY_CALLS[folder]
    entry = getattr(support.load_op(folder), name)
    op = getattr(torch.ops.triton_lessons, name)
    f64 = dict(dtype=torch.float64, device=common.DEVICE)
    primals = [torch.randn(shape, **f64) for shape in shapes]
    tangents = [torch.randn(shape, **f64) for shape in shapes]
    with forward_ad.dual_level():
        with pytest.raises(NotImplementedError, match="has no forward-mode derivative"):
            op(forward_ad.make_dual(primals[0], tangents[0]), *primals[1:], **kwargs)
        # inputs without a tangent run, as do a compiled call's backward and its ops
        torch.testing.assert_close(op(*primals, **kwargs), reference(*primals))
    if common.INTERPRETED:  # (on a GPU the compiled graph launches the kernels: no body runs)
        # Run by a compiled graph in a dual level, the body cannot see the tangents (PyTorch's
        # unpack_dual failed an internal assert there): refused, with or without one.
        # Inputs that require grad: 04's backward, traced, called the entry, whose compiled
        # branch handed it to itself without end (a RecursionError).
        # (reset: torch.ops' calls share one code object, whose recompiles, past Dynamo's limit
        # in a run of many tests, run eagerly, where these inputs have nothing to refuse)
        torch._dynamo.reset()
        compiled_op = torch.compile(op, backend="aot_eager")
        grad = [p.clone().requires_grad_() for p in primals]
        with forward_ad.dual_level():
            for inputs in (primals, [forward_ad.make_dual(primals[0], tangents[0])], grad):
                with pytest.raises(NotImplementedError, match="has no forward-mode derivative"):
                    compiled_op(*inputs, *primals[len(inputs) :], **kwargs)
    leaves = [p.clone().requires_grad_() for p in primals]
    compiled = torch.compile(entry, backend="aot_eager")
    loss = compiled(*leaves, **kwargs).sum()
    with forward_ad.dual_level():
        got = torch.autograd.grad(loss, leaves)
    want = torch.autograd.grad(reference(*leaves).sum(), leaves)
    for mine, theirs in zip(got, want):
        torch.testing.assert_close(mine, theirs)
    # Compiled, an entry records the op: in a dual level the call runs eagerly instead, and its
    # output carries the tangent (which the op had dropped, on a GPU silently).
    entry = torch.compile(getattr(support.load_op(folder), name), backend="aot_eager")
    torch.testing.assert_close(entry(*primals, **kwargs), reference(*primals))
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(primals[0], tangents[0])
        got = forward_ad.unpack_dual(entry(dual, *primals[1:], **kwargs)).tangent
        want = forward_ad.unpack_dual(reference(dual, *primals[1:])).tangent
    assert got is not None
    torch.testing.assert_close(got, want)


def _both_ways(f, primals, tangents):
    """The gradients of sum(f) + sum(f's tangent ** 2), and the tangents of f ** 2's gradients."""
    leaves = [p.clone().requires_grad_() for p in primals]
    with forward_ad.dual_level():
        value, tangent = forward_ad.unpack_dual(
            f(*(forward_ad.make_dual(x, t) for x, t in zip(leaves, tangents)))
        )
        loss = value.sum() + (tangent**2).sum()
    gradients = torch.autograd.grad(loss, leaves)
    with forward_ad.dual_level():
        duals = [
            forward_ad.make_dual(p.clone().requires_grad_(), t) for p, t in zip(primals, tangents)
        ]
        grads = torch.autograd.grad((f(*duals) ** 2).sum(), duals)
        grad_tangents = [forward_ad.unpack_dual(g).tangent for g in grads]
    return [*gradients, *grad_tangents]


@pytest.mark.parametrize("folder", list(ENTRY_CALLS))
def test_an_entry_names_a_batched_gradient_and_a_fake_tensor(folder):
    # autograd.grad(..., is_grads_batched=True) hands the backward a batch of gradients, without
    # storage (04's backward plan key raised PyTorch's data-pointer error); a fake tensor's data
    # pointer is 0, which the kernels would have been launched on.
    name, shapes, kwargs, _ = ENTRY_CALLS[folder]
    entry = getattr(support.load_op(folder), name)
    inputs = [torch.randn(shape, device=common.DEVICE, requires_grad=True) for shape in shapes]
    output = entry(*inputs, **kwargs)
    if folder != "03_blocked_sum":  # (03's backward is a view of the gradient: no kernel)
        batch = torch.randn(3, *output.shape, device=common.DEVICE)
        with pytest.raises(TypeError, match="a batched gradient") as raised:
            torch.autograd.grad(output, inputs[0], batch, is_grads_batched=True)
        assert raised.value.__context__ is None, repr(raised.value.__context__)
    with FakeTensorMode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's: a fake tensor's data pointer is deprecated
        fakes = [torch.randn(shape, device=common.DEVICE) for shape in shapes]
        with pytest.raises(TypeError, match="or a fake tensor"):
            entry(*fakes, **kwargs)


@pytest.mark.parametrize("folder", list(ENTRY_CALLS))
def test_a_registered_op_takes_a_batch_of_gradients(folder):
    # autograd.grad(..., is_grads_batched=True) runs the op's backward on each gradient of the
    # batch (PyTorch's fallback). 04's backward op returned a list, which that fallback refuses.
    name, shapes, kwargs, reference = ENTRY_CALLS[folder]
    support.load_op(folder)
    op = getattr(torch.ops.triton_lessons, name)
    f64 = dict(dtype=torch.float64, device=common.DEVICE)
    inputs = [torch.randn(shape, **f64, requires_grad=True) for shape in shapes]
    batch = torch.randn(2, *reference(*inputs).shape, **f64)
    got = torch.autograd.grad(op(*inputs, **kwargs), inputs, batch, is_grads_batched=True)
    for i, grad in enumerate(batch):
        want = torch.autograd.grad(reference(*inputs), inputs, grad)
        for mine, theirs in zip(got, want):
            torch.testing.assert_close(mine[i], theirs)


@pytest.mark.parametrize("through", ["entry", "registered op"])
@pytest.mark.parametrize("folder", list(ENTRY_CALLS))
def test_entries_called_from_threads_at_once(folder, through):
    # Triton's interpreter keeps one state for the process: threads calling an entry at once
    # failed there with its errors ("Did you forget to add @triton.jit ?"): 01's and 04's each
    # time, 02's and 03's at times. On a GPU, 02's first calls tuned one autotuner in threads at
    # once, which failed ("'NoneType' object is not a mapping") where its kernel was not yet
    # compiled: the turns of launch.THROUGH_TRITON. So did the registered op's eager calls,
    # which launch through wrap_triton.
    name, shapes, kwargs, reference = ENTRY_CALLS[folder]
    entry = getattr(support.load_op(folder), name)
    entry = entry if through == "entry" else getattr(torch.ops.triton_lessons, name)
    failures, together = [], threading.Barrier(6, timeout=120)  # each call starts at once

    def call(rows):
        for n in range(1, 6):
            # a new size each call: its first launch (the leading dim, 01's and 02's M)
            inputs = [torch.randn((rows + n, *shapes[0][1:]), dtype=torch.float64)]
            inputs += [torch.randn(shape, dtype=torch.float64) for shape in shapes[1:]]
            inputs = [t.to(common.DEVICE) for t in inputs]
            try:
                together.wait()
                torch.testing.assert_close(entry(*inputs, **kwargs), reference(*inputs))
            except Exception as error:  # noqa: BLE001 (each thread's failure, reported below)
                failures.append(repr(error)[:300])

    threads = [threading.Thread(target=call, args=(6 * i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures


# Each entry at sizes that take its fast kernels on a GPU (02: the persistent kernel adding a
# bias, and stream-K; 03: the split and its second pass; 04: wide.py's), with PyTorch's answer
# and the additions in each sum of the output and of each gradient.
ON_ANOTHER_GPU = {
    "01_matmul_elementwise": [
        ("matmul_elementwise", [(64, 96), (96, 80)], torch.matmul, (96, 80, 64)),
    ],
    "02_matmul_tiled": [
        ("matmul", [(512, 256), (256, 384), (384,)], lambda a, b, bias: a @ b + bias,
         (257, 384, 512, 512)),
        ("matmul", [(768, 8192), (8192, 3072)], torch.matmul, (8192, 3072, 768)),
    ],
    "03_blocked_sum": [("blocked_sum", [(4096, 512)], lambda x: x.sum(0), (4096, 1))],
    "04_weighted_sum": [("weighted_sum", [(4096, 512), (512,)], torch.matmul, (512, 1, 4096))],
}  # fmt: skip


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
@pytest.mark.parametrize("through", ["entry", "registered op", "compiled"])
@pytest.mark.parametrize("folder", list(ON_ANOTHER_GPU))
def test_inputs_on_a_gpu_that_is_not_the_current_one(folder, through):
    # A model spread over GPUs calls an op on cuda:1 while cuda:0 is current. Triton launches on
    # the current GPU, so the kernels ran on cuda:0, racing the work that made their inputs.
    op = support.load_op(folder)
    for name, shapes, reference, terms in ON_ANOTHER_GPU[folder]:
        call = dict(entry=getattr(op, name), compiled=torch.compile(getattr(op, name)))
        call["registered op"] = getattr(torch.ops.triton_lessons, name)
        bf16 = dict(dtype=torch.bfloat16, device="cuda:1")
        leaves = [torch.randn(shape, **bf16, requires_grad=True) for shape in shapes]
        with torch.cuda.device(0), common.uninitialized_memory_is_nan():
            call[through](*leaves)  # compiled and tuned first, so that the race below is short
            with torch.cuda.device(1):
                torch.cuda._sleep(200_000_000)  # cuda:1 busy: its inputs below are made late
            inputs = [leaf * 1 for leaf in leaves]
            got = call[through](*inputs)
            grad = torch.randn_like(got)
            grads = torch.autograd.grad(got, leaves, grad)
            assert torch.cuda.current_device() == 0
        assert got.device == torch.device("cuda:1")
        names = ("output", *(f"gradient {i}" for i in range(len(leaves))))
        what = f"{name} {tuple(shapes)} through the {through}"
        got = [got, *grads]
        common.assert_outputs_close(got, leaves, grad, reference, terms, names, what)


@pytest.mark.parametrize("folder", list(ENTRY_CALLS))
def test_a_compiled_entry_refuses_out_while_an_input_requires_grad(folder):
    # Eager, kernel_out refuses it; compiled, write_out copied the result into out, grad and all.
    name, shapes, kwargs, reference = ENTRY_CALLS[folder]
    entry = getattr(support.load_op(folder), name)
    inputs = [torch.randn(shape, device=common.DEVICE, requires_grad=True) for shape in shapes]
    out = torch.empty_like(reference(*inputs).detach())
    compiled = torch.compile(
        lambda *t: entry(*t, out=out, **kwargs), backend="aot_eager", fullgraph=True
    )
    with pytest.raises(Exception) as raised:
        compiled(*inputs)
    assert "out= is not differentiable" in "".join(traceback.format_exception(raised.value))
    # out that requires grad, inputs that do not: PyTorch's error of an in-place write to a leaf
    inputs = [t.detach() for t in inputs]
    out.requires_grad_()
    with pytest.raises(Exception) as raised:
        compiled(*inputs)
    assert "out requires grad" in "".join(traceback.format_exception(raised.value))


def test_checked_key_leaves_a_bad_input_to_validate_and_keeps_the_keys_error_otherwise():
    def key_of(name):
        return ("key", ("a", "b").index(name))

    def names_it(name):
        if name not in ("a", "b"):
            raise ValueError(f"name {name!r}: not one of a, b")

    assert common.checked_key(key_of, names_it, "b") == ("key", 1)
    with pytest.raises(ValueError, match="name 'c': not one of a, b") as raised:
        common.checked_key(key_of, names_it, "c")
    assert raised.value.__context__ is None  # alone, not below the key's error
    with pytest.raises(ValueError, match="x not in tuple"):  # validate() found nothing
        common.checked_key(key_of, lambda name: None, "c")


@pytest.mark.parametrize("folder", EXAMPLES)
def test_help_describes_the_flags(folder, capsys):
    with pytest.raises(SystemExit) as exit_info:
        support.load(folder).main(["--help"])
    assert exit_info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # the epilog's lines joined
    assert "--dtype" in out and "usage" in out and "default" in out
    assert "Triton's interpreter runs the kernels on the CPU" in out
    parts = {
        "02_matmul_tiled": "fused.py, persistent.py, stream_k.py, each a script",
        "04_weighted_sum": "wide.py, a script",
    }
    if folder in parts:
        assert f"The lesson goes on in {parts[folder]} (see its --help)." in out


@pytest.mark.parametrize("script", ["tools/bench.py", "tools/tile_sweep.py"])
def test_a_tool_run_by_its_path_shows_its_help(script):
    # run by its path, Python puts tools/ first on sys.path, not the root that holds common
    done = subprocess.run(
        [sys.executable, script, "--help"], cwd=support.REPO_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:")


@pytest.mark.parametrize("folder", EXAMPLES)
def test_an_op_run_as_a_script_checks_itself(folder):
    # python NN_name/op.py, and its --help, had printed nothing
    script = [sys.executable, str(support.REPO_ROOT / folder / "op.py")]
    helped = subprocess.run([*script, "--help"], capture_output=True, text=True)
    assert helped.returncode == 0, helped.stderr
    said = " ".join(helped.stdout.split())
    assert said.startswith("usage:") and "checks the op on this machine" in said
    # On a GPU one dtype, the 16-bit kernels' (every dtype's first calls tune: minutes for 02)
    dtypes = common.OP_DTYPES if common.INTERPRETED else [torch.bfloat16]
    chosen = [] if common.INTERPRETED else ["--dtype", "bfloat16"]
    done = subprocess.run([*script, *chosen], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    passed = [line for line in done.stdout.splitlines() if line.startswith("ok ")]
    cases = 2 if folder == "02_matmul_tiled" else 1  # 02: its fused kernel, then stream-K's
    assert len(passed) == cases * 2 * len(dtypes)  # the function and the registered op
    assert sum("torch.ops.triton_lessons." in line for line in passed) == len(passed) // 2
    assert "(a view)" in done.stdout


def test_check_op_says_what_is_wrong(capsys):
    def off(a, b):  # one element off by far more than rounding
        bump = torch.zeros(3, 5, dtype=a.dtype, device=a.device)
        bump[1, 2] = 100
        return a @ b + bump

    def raises(a, b):
        raise ValueError("no kernel")

    def writes_its_input(a, b):
        a.data.mul_(2)  # (the reference, taken after, sees the same a)
        return a @ b

    calls = dict(off=off, raises=raises, writes_its_input=writes_its_input, right=torch.matmul)
    cases = [(lambda t: (t(3, 4), t(5, 4).T), (4, 5, 3))]
    status = common.check_op("doc", calls, torch.matmul, cases, argv=[])
    out = capsys.readouterr().out
    assert status == 1
    assert "WRONG  off(3x4, 4x5 (a view)) float32: AssertionError: off: output: 1 of 15" in out
    assert "elements off; worst at (1, 2)" in out
    assert "WRONG  raises(3x4, 4x5 (a view)) float64: ValueError: no kernel" in out
    assert "WRONG  writes_its_input(3x4, 4x5 (a view)) bfloat16: it changed input 0" in out
    assert "ok     right(3x4, 4x5 (a view)) float16 (" in out
    assert out.count("WRONG") == 3 * len(common.OP_DTYPES)
    assert (
        common.check_op(
            "doc", dict(right=torch.matmul), torch.matmul, cases, ["--dtype", "float16"]
        )
        == 0
    )
    assert capsys.readouterr().out.count("ok ") == 1
    with pytest.raises(ValueError, match="2 terms for an output and 2 inputs"):
        common.check_op("doc", calls, torch.matmul, [(cases[0][0], (4, 5))], argv=[])


def test_bench_names_an_only_that_matches_nothing_and_fails_where_it_measures_nothing(capsys):
    from tools import bench

    # --only lay had run no table and exited 0 (a table's word must be whole)
    for word in ("zzz", "lay"):
        with pytest.raises(SystemExit) as exit_info:
            bench.main(["--only", word])
        assert exit_info.value.code == 2
        assert f"--only {word}: in no folder's name" in capsys.readouterr().err
    if common.INTERPRETED:  # make bench had exited 0 having measured nothing
        assert bench.main(["--only", "04"]) == 1


@pytest.mark.parametrize(
    "lesson", ["nothing/main.py", "01_matmul_elementwise/op.py", "01_matmul_elementwise/any_x.py"]
)
def test_asm_names_a_file_it_cannot_show(lesson):
    # 01's any_x.py, which has no --asm, ended in an AttributeError (no scalar_kernel)
    done = subprocess.run(
        [sys.executable, "-m", "tools.asm", lesson],
        cwd=support.REPO_ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and "name a lesson's main.py" in done.stderr, done.stderr


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


def test_assert_close_to_float64_checks_each_output_its_dtype_and_the_tf32_allowance():
    torch.manual_seed(0)
    x, w = torch.randn(300, 64), torch.randn(64)
    three = lambda x, w: (x @ w, x * w, w.expand(3, -1))  # noqa: E731
    got = three(x, w)
    what = ("y", "xw", "w")
    common.assert_close_to_float64(got, three, (x, w), (64, 1, 1), what)
    with pytest.raises(AssertionError, match="xw: 1 of 19200 elements off"):
        wrong = (
            got[0],
            got[1].clone().index_put_((torch.tensor(7), torch.tensor(3)), torch.tensor(9.0)),
            got[2],
        )
        common.assert_close_to_float64(wrong, three, (x, w), (64, 1, 1), what)
    with pytest.raises(AssertionError, match="w: is torch.float64, not torch.float32"):
        common.assert_close_to_float64((*got[:2], got[2].double()), three, (x, w), (64, 1, 1), what)
    with pytest.raises(AssertionError, match="xw: is NoneType, not a tensor"):
        common.assert_close_to_float64((got[0], None, got[2]), three, (x, w), (64, 1, 1), what)
    # A product off by 2^-10 of itself, as TF32's rounding of two inputs may leave it: allowed
    # with tf32, an error without.
    a, b = torch.randn(4, 1), torch.randn(1, 4)
    off = (a.double() @ b.double() * (1 + 2.0**-10)).float()
    common.assert_close_to_float64(off, torch.matmul, (a, b), 1, "tf32", tf32=True)
    with pytest.raises(AssertionError, match="ieee: .* elements off"):
        common.assert_close_to_float64(off, torch.matmul, (a, b), 1, "ieee")


def test_descriptor_rules():
    assert common.descriptor_problem(torch.randn(8, 8)) is None
    assert "not a positive multiple of 16" in common.descriptor_problem(torch.randn(8, 10))
    assert "0 bytes" in common.descriptor_problem(torch.randn(8).expand(4, 8))
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


@pytest.mark.parametrize("interpreted", [False, True])
def test_timing_table_names_what_it_timed(interpreted, capsys, monkeypatch):
    monkeypatch.setattr(common, "INTERPRETED", interpreted)
    row = common.timing_row("c", "v", (1.0, None, None), (2.0, None, None), 1.0, "TFLOP/s")
    common.print_table([row], common.TIMING_COLUMNS)
    header, *_, before_last, last = capsys.readouterr().out.splitlines()
    shown, hidden = ("CPU ms", "GPU ms") if interpreted else ("GPU ms", "CPU ms")
    assert shown in header and hidden not in header
    assert ("on a gpu this table times" in before_last.lower()) == interpreted
    assert ("columns that are '-' here" in last) == interpreted  # what a CPU leaves out


def test_kernel_out_names_what_is_wrong_with_out():
    a = torch.randn(8, 6)

    def kernel_out(out, inputs=(a,)):
        return common.kernel_out(out, (8, 6), inputs)

    with pytest.raises(TypeError, match="out must be a torch.Tensor, got list"):
        kernel_out([])
    with pytest.raises(
        ValueError, match=r"out is \(6, 8\) torch.float32 on cpu, expected \(8, 6\)"
    ):
        kernel_out(torch.empty(6, 8))
    with pytest.raises(
        ValueError, match=r"out is \(8, 6\) torch.float16 on cpu, expected .* torch.float32"
    ):
        kernel_out(torch.empty(8, 6, dtype=torch.float16))
    with pytest.raises(ValueError, match=r"strides \(0, 1\).*share one memory location"):
        kernel_out(torch.empty(1, 6).expand(8, 6))
    with pytest.raises(ValueError, match="not differentiable: an input requires grad"):
        kernel_out(torch.empty(8, 6), (a.clone().requires_grad_(),))
    out = torch.zeros(8, 6, requires_grad=True)
    with pytest.raises(ValueError, match="out requires grad"):
        kernel_out(out)
    with torch.no_grad():  # no graph to record: both are fine, as for PyTorch's out=
        assert kernel_out(out, (a.clone().requires_grad_(),)) is out
    with torch.inference_mode():
        inference = torch.empty(8, 6)
        assert kernel_out(inference) is inference  # inside inference_mode, as for PyTorch's
    with pytest.raises(ValueError, match="out is an inference tensor"):
        kernel_out(inference)  # PyTorch's in-place ops refuse it outside inference_mode


def test_kernel_out_writes_out_unless_it_shares_storage_with_an_input():
    a = torch.randn(8, 6)
    new = common.kernel_out(None, (8, 6), (a,))
    assert new.shape == (8, 6) and new.dtype == torch.float32
    out = torch.empty(8, 6)
    assert common.kernel_out(out, (8, 6), (a,)) is out
    storage = torch.randn(8, 12)
    # out is an input, a transposed view of one, or beside one in the same storage: a new tensor,
    # which write_out then copies into out.
    for out, inputs in [
        (a, (a,)),
        (a.t(), (a.t().contiguous(), a)),
        (storage[:, 6:], (storage[:, :6],)),
    ]:
        fresh = common.kernel_out(out, tuple(out.shape), inputs)
        assert fresh is not out and fresh.shape == out.shape
        assert not any(
            fresh.untyped_storage().data_ptr() == t.untyped_storage().data_ptr() for t in inputs
        )
        fresh.fill_(3.0)
        assert common.write_out(fresh, out) is out and torch.equal(out, torch.full_like(out, 3.0))


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
    # an entry compiled hands out= to write_out alone, whose copy_ would broadcast and cast
    with pytest.raises(ValueError, match=r"out is \(2, 4\) torch.float32 on cpu, expected \(4,\)"):
        common.write_out(result, torch.zeros(2, 4))
    with pytest.raises(ValueError, match=r"out is \(4,\) torch.int64 on cpu, expected .*float32"):
        common.write_out(result, torch.zeros(4, dtype=torch.int64))
    with pytest.raises(TypeError, match="out must be a torch.Tensor, got list"):
        common.write_out(result, [0.0] * 4)


def test_timing_row():
    times, torch_times = (2.0, 10.0, 4.0), (4.0, 5.0, 3.0)
    row = common.timing_row("case", "v", times, torch_times, 50.0, "GB/s", ceiling=100.0)
    assert list(row) == list(common.TIMING_COLUMNS)
    assert row["GPU x torch"] == 2.0 and row["host x torch"] == 0.5 and row["% of ceiling"] == 50.0
    assert row["loop ms"] == 4.0 and row["loop x torch"] == 0.75
    interpreted = common.timing_row("c", "v", (1.0, None, None), (2.0, None, None), 1.0, "TFLOP/s")
    assert interpreted["host x torch"] is None and interpreted["% of ceiling"] is None
    assert interpreted["loop ms"] is None and interpreted["loop x torch"] is None


@pytest.mark.skipif(support.ON_GPU, reason="what the interpreter reports; a GPU times for real")
def test_the_interpreter_has_no_host_time_and_times_wall_clock():
    calls = []
    gpu, host, loop = common.measure(lambda: calls.append(1), setup=lambda: calls.append(0))
    assert gpu >= 0 and host is None and loop is None
    assert calls[0] == 0 and len(calls) == 5  # setup, a first call, then three timed calls


def test_host_table_replays_exactly_the_launches_an_entry_makes():
    """host.replays records each launch of an op.py entry and replays it, as kernel[grid] and as
    the entry launches it: the same kernels, grids and arguments, so its output buffers receive
    the entry's values again."""
    op3, op4 = support.load_op("03_blocked_sum"), support.load_op("04_weighted_sum")
    x, w = torch.randn(3000, 40, device=common.DEVICE), torch.randn(40, device=common.DEVICE)
    _, _, launches = host.replays(lambda: op3.blocked_sum(x))
    assert launches == 2  # the split's first pass, then the second pass over its partial rows
    recorded = []
    with host.recording(recorded):
        expected = op4.weighted_sum(x, w).clone()
    assert len(recorded) == 1
    kernel, launched, grid, args, kwargs = recorded[0]
    assert kernel is op4.forward_wide_kernel  # the kernel itself, for the bare replay
    y = args[2]  # the output the entry wrote
    for launcher in (kernel, launched):  # as host.replays' bare and launched calls launch it
        y.fill_(float("nan"))
        launcher[grid](*args, **kwargs)
        assert torch.equal(y, expected)
    assert common.traceable is not None and not isinstance(common.traceable, host.Recorder)


def test_layouts_table_runs_every_layout_and_summarizes(monkeypatch):
    def one_ms(fn):  # no GPU timing here: run the call once and count it as 1 ms
        fn()
        return 1.0

    monkeypatch.setattr(layouts, "gpu_ms", one_ms)
    shapes = layouts.products(16, 32, 24)
    rows = layouts.measure(shapes, dtypes=[("bfloat16", None), ("float32", "high")])
    assert len(rows) == 2 * 4 * 4  # dtypes x product shapes x layouts
    assert {(row["case"], row["layout"]) for row in rows if row["dtype"] == "float32 high"} == {
        (case, layout) for case in ("24x32x16", "24x16x32", "16x32x24", "32x16x24")
        for layout in ("NN", "NT", "TN", "TT")
    }  # fmt: skip
    assert all(row["x_torch"] == 1.0 for row in rows)
    ratios = [dict(dtype="d", layout="NN", x_torch=x) for x in (0.5, 2.0, 1.0)]
    assert layouts.summary(ratios) == [
        dict(dtype="d", layout="NN", cases=3, geomean=1.0, least=0.5)
    ]


def test_training_step_on_the_lessons_ops_tracks_pytorch(monkeypatch):
    monkeypatch.setattr(train_step, "SEQ", 16)  # 4 sequences of 16 tokens
    cases = [(16, 32, 64, "float32", None), (16, 32, 64, "bfloat16", None)]
    rows = train_step.measure(cases=cases, steps=train_step.WINDOW + 1)  # two turns each
    assert [(row["dtype"], row["mode"]) for row in rows] == [
        ("float32", "eager"),
        ("bfloat16", "eager"),
    ]
    # float32 runs under TF32 on a GPU (10-bit mantissas), and bfloat16 rounds every op
    assert rows[0]["loss_gap"] < 5e-3 and rows[1]["loss_gap"] < 0.02
    assert all(row["ours_ms"] > 0 and row["torch_ms"] > 0 for row in rows)
    gpu_times = [row[name] for row in rows for name in ("ours_gpu_ms", "torch_gpu_ms")]
    if common.INTERPRETED:  # no CUDA: torch.profiler has no kernels to time
        assert gpu_times == [None] * 4
    else:
        assert all(t > 0 for t in gpu_times)


def test_training_step_models_take_turns():
    """train() times the two step functions window by window, alternating which goes first, and
    hands each its own losses in step order."""
    calls = []

    def stepper(name):
        def step(x, target):
            calls.append((name, int(x)))
            return torch.tensor(float(x))

        return step

    data = [(torch.tensor(i), None) for i in range(4)]
    window, count = train_step.WINDOW, 3 * train_step.WINDOW
    (ours, our_ms), (theirs, their_ms) = train_step.train(stepper("a"), stepper("b"), data, count)
    timed = calls[2 * train_step.WARMUP :]
    windows = [timed[i : i + window] for i in range(0, len(timed), window)]
    assert [{name for name, _ in w} for w in windows] == [{"a"}, {"b"}, {"b"}, {"a"}, {"a"}, {"b"}]
    batches = [[i % 4 for i in range(first, first + window)] for first in range(0, count, window)]
    assert [[i for _, i in w] for w in windows] == [b for b in batches for _ in "ab"]  # both alike
    assert ours == theirs == [float(i % 4) for i in range(count)]
    assert our_ms > 0 and their_ms > 0


def test_host_us_each_takes_the_rounds_in_turn(monkeypatch):
    # The host table times each row's calls round by round in turn, so that a drift of the
    # host's speed reaches entry and bare alike; each first call (compiles, tunes) is untimed.
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    log = []
    fns = {name: (lambda name=name: log.append(name)) for name in ("entry", "bare")}
    us = common.host_us_each(fns, calls=2, rounds=3)
    assert log == ["entry", "bare"] + ["entry", "entry", "bare", "bare"] * 3
    assert set(us) == {"entry", "bare"} and all(value > 0 for value in us.values())
    assert common.host_us(fns["bare"], calls=1, rounds=2) > 0 and log[-3:] == ["bare"] * 3


# ---- common/launch.py: the Launcher op.py launches through on a GPU ----


class FakeKernel:
    """A stand-in for a @triton.jit kernel (or, with a config, an autotune of one): kernel[grid]
    logs ("triton", grid, args, kwargs) and returns a compiled kernel, which logs ("compiled",
    grid, args); the two logs share one list."""

    def __init__(self, config=None):
        def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr = False):
            pass

        self.signature = inspect.signature(kernel)
        self.arg_names = list(self.signature.parameters)
        self.log, self.best_config, self.pre_run_hooks = [], config, []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.log.append(("triton", grid, args, kwargs))
            return FakeCompiled(self.log)

        return launch


class FakeCompiled:
    def __init__(self, log):
        self.log = log

    def __getitem__(self, grid):
        return lambda *args: self.log.append(("compiled", grid, args))


def test_launcher_goes_through_triton_once_per_kind_of_call(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    kernel = FakeKernel(triton.Config({"BLOCK": 64}, num_warps=4))
    launcher = launch.Launcher(kernel)
    x, y = torch.randn(40), torch.empty(40)
    grid = lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
    launcher[grid](x, y, 40)
    launcher[grid](x, y, 40)  # the same kind: the compiled kernel, every argument in order
    assert kernel.log == [
        ("triton", grid, (x, y, 40), {}),
        ("compiled", (1, 1, 1), (x, y, 40, 64, False)),  # the tuned BLOCK, EVEN's default
    ]
    kernel.log.clear()
    launcher[grid](x[1:], y[1:], 39)  # addresses off 16 bytes, another n: Triton again
    launcher[grid](x.double(), y.double(), 40)  # another dtype: Triton again
    launcher[(3, 2)](x, y, 40, EVEN=True)  # a keyword given: Triton again, then kept
    launcher[(3, 2)](x, y, 40, EVEN=True)
    assert [entry[0] for entry in kernel.log] == ["triton"] * 3 + ["compiled"]
    assert kernel.log[-1] == ("compiled", (3, 2, 1), (x, y, 40, 64, True))


def test_a_named_launcher_keys_by_the_callers_kind(monkeypatch):
    # A Named launcher's calls are keyed by the kind its caller gives (op.py's plan key), with
    # no call_kind: the first of a kind goes through Triton, the next are compiled launches.
    # After forget(), each time, a kept Named launcher goes through Triton again.
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(launch, "call_kind", lambda *_: pytest.fail("call_kind was computed"))
    kernel = FakeKernel(triton.Config({"BLOCK": 64}))
    monkeypatch.setattr(triton.runtime, "JITFunction", FakeKernel)  # launcher() takes it
    first, second = (launch.launcher(kernel, kind=(key, 40)) for key in ("one", "another"))
    try:
        x, y = torch.randn(40), torch.empty(40)
        for named in (first, first, second, second):
            named[(2,)](x, y, 40, EVEN=True)
        assert [entry[0] for entry in kernel.log] == ["triton", "compiled"] * 2
        assert kernel.log[-1] == ("compiled", (2, 1, 1), (x, y, 40, 64, True))
        for _ in range(2):
            launch.forget()
            kernel.log.clear()
            for _ in range(2):
                first[(2,)](x, y, 40, EVEN=True)
            assert [entry[0] for entry in kernel.log] == ["triton", "compiled"]
    finally:
        launch.forget()


def test_launcher_leaves_to_triton_what_a_compiled_kernel_would_skip(monkeypatch):
    # Triton runs a config's pre_hook and a kernel's pre-run hooks before each launch; a compiled
    # kernel would skip them. An argument call_kind does not know (a tuple here) has no kind.
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    x, y = torch.randn(40), torch.empty(40)
    with_pre_hook = FakeKernel(triton.Config({"BLOCK": 64}, pre_hook=lambda args: None))
    with_run_hook = FakeKernel(triton.Config({"BLOCK": 64}))
    with_run_hook.pre_run_hooks.append(lambda *args, **kwargs: None)
    for kernel, args in ((with_pre_hook, (x, y, 40)), (with_run_hook, (x, y, 40))):
        launcher = launch.Launcher(kernel)
        for _ in range(3):
            launcher[(1,)](*args)
        assert [entry[0] for entry in kernel.log] == ["triton"] * 3
    plain = FakeKernel(triton.Config({"BLOCK": 64}))
    launcher = launch.Launcher(plain)
    for _ in range(2):
        launcher[(1,)](x, y, (40,))
    assert [entry[0] for entry in plain.log] == ["triton"] * 2 and not launcher.kinds


def test_every_launch_of_the_host_tables_entries_has_a_kind(monkeypatch):
    # Each op.py launch's arguments are tensors or SCALARS, so that on a GPU the Launcher keeps
    # its compiled kernel (a call without a kind would go through Triton each time).
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    for entry, size, call, _ in host.cases():
        launches = []
        with host.recording(launches):
            call()
        assert launches, entry
        for kernel, _, grid, args, kwargs in launches:
            assert launch.call_kind(args, kwargs) is not None, (entry, size, kernel)


def test_launcher_is_made_for_jit_kernels_and_their_autotuners_only():
    def kernel(x_ptr, n, BLOCK: tl.constexpr = 4):
        pass

    jit = triton.runtime.JITFunction(kernel)  # @triton.jit's object, made here without a GPU
    tuned = triton.autotune(configs=[triton.Config({"BLOCK": 8})], key=["n"])(jit)
    made = launch.launcher(tuned)
    assert isinstance(launch.launcher(jit), launch.Launcher) and launch.launcher(tuned) is made
    assert made.jit is jit and made.defaults == {"BLOCK": 4}
    rules = triton.heuristics({"BLOCK": lambda args: 4})(jit)  # its rules run at each launch
    assert launch.launcher(rules) is rules
    launch.forget()
    assert launch.launcher(tuned) is not made
