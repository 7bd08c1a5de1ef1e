"""What every test file needs: the examples loaded from their paths, and a marker for GPU-only tests."""

import contextlib
import math
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (switches the interpreter on before any example defines a kernel)
import triton  # noqa: E402

ON_GPU = not common.INTERPRETED

gpu_only = pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU; Triton's interpreter runs here")


# Every config each autotuned kernel lists, by kernel, before load() keeps two of them.
ALL_CONFIGS = {}


def load(folder):
    """The example module in `folder` (for instance "04_weighted_sum"). On a GPU each of its autotuned kernels
    keeps two configs for the tests: compiling and timing every config of every kernel in each new bucket made a
    plain `make test` take over ten minutes (results/NOTES.md item 50). Kept: the first, and the smallest tile of the
    rest, which the lessons' prunes fall back to (02's fits float64 in shared memory). Each lesson's
    test_every_config_on_gpu checks every config through pinned_config. (The interpreter's lists hold one.)"""
    return keep_two_configs(common.load_example(common.REPO_ROOT / folder / "main.py"))


def keep_two_configs(module):
    """module, each of its autotuned kernels left with its first config and its smallest tile (see load)."""
    for kernel in autotuned_kernels(module):
        if kernel not in ALL_CONFIGS:
            ALL_CONFIGS[kernel] = configs = kernel.configs
            # Two, never one: the autotuner runs a lone config unpruned, even where it overflows shared memory.
            kernel.configs = [configs[0], min(configs[1:], key=tile_elements)] if len(configs) > 1 else configs
    return module


def autotuned_kernels(module):  # the triton.autotune'd kernels among module's names
    return [value for value in vars(module).values() if isinstance(value, triton.runtime.Autotuner)]


def tile_elements(config):  # the product of a config's tile sides (BLOCK_M, BLOCK_N, BLOCK_K, ROWS_TILE, D_TILE)
    return math.prod(value for name, value in config.kwargs.items() if name.startswith("BLOCK_") or name.endswith("_TILE"))


def most_configs(module):  # the longest config list among module's autotuned kernels
    return max(len(ALL_CONFIGS.get(kernel, kernel.configs)) for kernel in autotuned_kernels(module))


@contextlib.contextmanager
def pinned_config(monkeypatch, module, index):
    """Inside, each autotuned kernel of module runs its config `index` (in ALL_CONFIGS; a shorter list wraps
    around): alone in the list, it runs untimed and unpruned. common.launch_tuned starts with no choices made and
    forgets these at the test's end. Yields each kernel's config, by kernel name, and names them on a failure."""
    monkeypatch.setattr(common, "_tuned", {})
    pinned = {}
    for kernel in autotuned_kernels(module):
        configs = ALL_CONFIGS.get(kernel, kernel.configs)
        pinned[kernel.fn.__name__] = config = configs[index % len(configs)]
        monkeypatch.setattr(kernel, "configs", [config])
    try:
        yield pinned
    except AssertionError as error:
        raise AssertionError(f"with {pinned}: {error}") from error


def dispatched_ops(fn):
    """The names of this project's torch.library ops that fn() dispatches to (torch.profiler records each one)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return sorted({event.name for event in prof.events() if event.name.startswith("triton_lessons::")})
