"""Where docs/differential.md's figures come from: Cedar's build, PyTorch's, the CPU and MPI."""
import subprocess

import torch


def _first_lines(cmd, n):
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        text = (done.stdout or done.stderr).strip().splitlines()
    except OSError as e:
        text = [f"({e})"]
    return [line.rstrip() for line in text if line.strip()][:n]


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def collect(cedar):
    """A list of (label, text) lines."""
    config = [line.strip(" -") for line in torch.__config__.show().splitlines()
              if line.strip() and not line.startswith("PyTorch built with")]
    return [
        ("Cedar (`cedar --version`)", " ".join(_first_lines([cedar, "--version"], 3))),
        ("PyTorch (`torch.__version__`)", torch.__version__),
        ("PyTorch build (`torch.__config__.show()`, first lines)", "; ".join(config[:4])),
        ("CPU", _cpu_model()),
        ("MPI (`mpirun --version`)", " ".join(_first_lines(["mpirun", "--version"], 1))),
    ]
