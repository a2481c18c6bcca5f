#!/usr/bin/env python3
"""Checks that every #include in Cedar points down its layers (docs/architecture.md).

    platform/ config/  <-  comm/  <-  algorithms/ models/ datasets/ results/  <-  reports/
                                                                   <-  runner/suite/ runner/train/
                                                                   <-  runner/ps/  <-  runner/run/
                                                                   <-  runner/cli/
    inside algorithms/:  codecs/  <-  exchange/  <-  gossip/  <-  the paper files (algorithms/)

Codecs include no paper file, no exchange and no communicator, so that they build alone (the fuzz
targets compile them without the paper files). Exchange and gossip may include the plugin
interface in algorithms/ (algorithm.h, algorithm_state.h).

A file may include its own folder and the folders listed for it below; tests/, bench/ and fuzz/
may include anything in the product, and nothing in the product may include them. Prints each
include that breaks the rule (file:line, what it includes, what its folder may include) and exits
1 if there is one.

Usage: check_layers.py [ROOT]   (ROOT: the source tree, default: this script's parent folder)
"""
import pathlib
import re
import sys

PRODUCT_LAYERS = {
    "platform": [],
    "config": [],
    "comm": ["platform", "config"],
    "algorithms/codecs": ["platform", "config"],
    "algorithms/exchange": ["platform", "config", "comm", "algorithms/codecs", "algorithms"],
    "algorithms/gossip": ["platform", "config", "comm", "algorithms/codecs", "algorithms/exchange",
                          "algorithms"],
    "algorithms": ["platform", "config", "comm"],
    "models": ["platform", "config", "comm"],
    "datasets": ["platform", "config", "comm"],
    "results": ["platform", "config", "comm"],
    "reports": ["platform", "config", "comm", "results"],
    "runner/suite": ["platform", "config", "comm", "algorithms", "models", "datasets", "results"],
    "runner/train": ["platform", "config", "comm", "algorithms", "models", "datasets", "results",
                     "runner"],
    "runner/ps": ["platform", "config", "comm", "algorithms", "models", "datasets", "results",
                  "runner", "runner/train"],
    "runner/run": ["platform", "config", "comm", "algorithms", "models", "datasets", "results",
                   "runner", "runner/train", "runner/ps"],
    "runner/cli": ["platform", "config", "comm", "algorithms", "models", "datasets", "results", "reports",
                   "runner", "runner/suite", "runner/train", "runner/ps", "runner/run"],
}
# Every layer above algorithms/ sees its subfolders too.
ALGORITHM_PARTS = ["algorithms/codecs", "algorithms/exchange", "algorithms/gossip"]
for _layer, _allowed in PRODUCT_LAYERS.items():
    if not _layer.startswith("algorithms/") and ("algorithms" in _allowed or _layer == "algorithms"):
        _allowed.extend(p for p in ALGORITHM_PARTS if p != _layer and p not in _allowed)
PRODUCT = sorted(PRODUCT_LAYERS)
# Outside the product: they may include any product folder, and their own.
CLIENTS = {"tests": PRODUCT, "bench": PRODUCT, "fuzz": PRODUCT}
SOURCE_SUFFIXES = {".h", ".cpp", ".in"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(relative_path):
    """The layer a source path (or an include path) belongs to, or None outside every layer."""
    parts = pathlib.PurePosixPath(relative_path).parts
    if not parts:
        return None
    if parts[0] == "runner":
        # runner/source_revision.h belongs to the runner as a whole.
        return "runner/" + parts[1] if len(parts) > 2 else "runner"
    if parts[0] == "algorithms" and len(parts) > 2 and "algorithms/" + parts[1] in PRODUCT_LAYERS:
        return "algorithms/" + parts[1]
    return parts[0] if parts[0] in PRODUCT_LAYERS or parts[0] in CLIENTS else None


def allowed_for(layer):
    return set(PRODUCT_LAYERS.get(layer) or CLIENTS.get(layer) or []) | {layer}


def violations(root):
    found = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        relative = path.relative_to(root).as_posix()
        if relative.startswith("build") or "/." in "/" + relative:
            continue
        layer = layer_of(relative)
        if layer is None:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match or "/" not in match.group(1):
                continue  # a file of the same folder
            target = layer_of(match.group(1))
            if target is None or target in allowed_for(layer):
                continue
            found.append(f"{relative}:{number}: includes {match.group(1)}, but {layer}/ may "
                         f"include only {', '.join(sorted(allowed_for(layer)))}")
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    root = root.resolve()
    if not (root / "CMakeLists.txt").is_file():
        sys.exit(f"check_layers: {root} is not Cedar's source tree (no CMakeLists.txt)")
    found = violations(root)
    for line in found:
        print(line)
    print(f"check_layers: {len(found)} include(s) against the layers in {root}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
