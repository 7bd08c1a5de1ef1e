"""What every test file needs: the examples loaded from their paths, and a marker for GPU-only tests."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (switches the interpreter on before any example defines a kernel)

ON_GPU = not common.INTERPRETED

gpu_only = pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU; Triton's interpreter runs here")


def load(folder):
    """The example module in `folder` (for instance "04_weighted_sum")."""
    return common.load_example(common.REPO_ROOT / folder / "main.py")


def dispatched_ops(fn):
    """The names of this project's torch.library ops that fn() dispatches to (torch.profiler records each one)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return sorted({event.name for event in prof.events() if event.name.startswith("triton_lessons::")})
