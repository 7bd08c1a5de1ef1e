"""What every test file needs: the lessons loaded from their paths, a marker for GPU-only tests,
and the trimmed config lists that keep a GPU run of the tests short."""

import contextlib
import math
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (switches the interpreter on before any example defines a kernel)
import triton  # noqa: E402  (after common, which may switch on the interpreter)
from tools import REPO_ROOT, float32_matmul_precision, load_example  # noqa: E402, F401

ON_GPU = not common.INTERPRETED

gpu_only = pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU; Triton's interpreter runs here")


# Every config each autotuned kernel lists, by kernel, before load() keeps two of them.
ALL_CONFIGS = {}


def load(folder):
    """The lesson module in `folder` (for instance "04_weighted_sum"). On a GPU each of its
    autotuned kernels keeps two configs for the tests: compiling and timing every config of every
    kernel for each new key made a plain `make test` take over ten minutes (results/NOTES.md item
    50). Kept: the first, and the smallest tile of the rest, which fits wherever the first does not
    (02: float64 tiles in shared memory). Each lesson's test_every_config_on_gpu checks every
    config through pinned_config. (The interpreter's lists hold one.)"""
    return keep_two_configs(load_example(REPO_ROOT / folder / "main.py"))


def load_op(folder):
    """The op.py beside the lesson in `folder` (see load_beside)."""
    return load_beside(folder, "op.py")


def load_beside(folder, file):
    """A file beside the lesson in `folder` (op.py; 02's persistent.py), after support.load has
    loaded the lesson (so that it launches the lesson's kernels with the tests' configs); its own
    autotuned kernels keep two configs too."""
    load(folder)
    return keep_two_configs(load_example(REPO_ROOT / folder / file))


def keep_two_configs(module):
    """module, each autotuned kernel among its names left with its first config and its smallest
    tile (see load)."""
    for kernel in autotuned_kernels(module):
        if kernel not in ALL_CONFIGS:
            ALL_CONFIGS[kernel] = configs = kernel.configs
            # Two, never one: the autotuner runs a lone config unpruned, even where it overflows
            # shared memory.
            kernel.configs = (
                [configs[0], min(configs[1:], key=tile_elements)] if len(configs) > 1 else configs
            )
    return module


def autotuned_kernels(module):  # the triton.autotune'd kernels among module's names
    return [value for value in vars(module).values() if isinstance(value, triton.runtime.Autotuner)]


def tile_elements(config):
    """The product of a config's tile sides: its constexprs named BLOCK_* or *_TILE (ValueError if
    it has none)."""
    sides = [
        value
        for name, value in config.kwargs.items()
        if name.startswith("BLOCK_") or name.endswith("_TILE")
    ]
    if not sides:
        raise ValueError(
            f"config {config} names no tile side (BLOCK_* or *_TILE): "
            "the tests cannot find its smallest"
        )
    return math.prod(sides)


def most_configs(module):  # the longest config list among module's autotuned kernels
    return max(len(ALL_CONFIGS.get(kernel, kernel.configs)) for kernel in autotuned_kernels(module))


@contextlib.contextmanager
def pinned_config(module, index):
    """Inside the block, each autotuned kernel of module runs its config `index` (in ALL_CONFIGS;
    a shorter list wraps around): alone in the list, it runs untimed and unpruned. Yields each
    kernel's config, by kernel name; an exception inside gets a note naming them."""
    pinned = {}
    common.launch.forget()  # op.py's Launchers keep the picks of the configs before (and after)
    with pytest.MonkeyPatch.context() as patch:
        for kernel in autotuned_kernels(module):
            configs = ALL_CONFIGS.get(kernel, kernel.configs)
            pinned[kernel.fn.__name__] = config = configs[index % len(configs)]
            patch.setattr(kernel, "configs", [config])
        try:
            yield pinned
        except Exception as error:  # a wrong answer, or a config that does not compile
            error.add_note(
                f"pinned configs: { ({name: str(config) for name, config in pinned.items()}) }"
            )
            raise
        finally:
            common.launch.forget()


def dispatched_ops(fn):
    """The names of this project's torch.library ops that fn() dispatches to (torch.profiler
    records each one)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return sorted(
        {event.name for event in prof.events() if event.name.startswith("triton_lessons::")}
    )
