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

reports/ and runner/ read the results database only through results/' typed read API
(results/run_queries.h and its siblings): a file there that includes <sqlite3.h> or results/'
internal statement.h / run_columns.h, or holds SQL text (SELECT, INSERT INTO, UPDATE ... SET,
DELETE FROM, PRAGMA), is named with its line as well.

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
# Folders that read results only through results/' typed queries, and what they may not hold.
TYPED_RESULTS_READERS = ("reports", "runner")
SQLITE_INCLUDE = re.compile(r'^\s*#\s*include\s+[<"](sqlite3\.h|results/statement\.h|'
                            r'results/run_columns\.h)[>"]')
SQL_TEXT = re.compile(r'\b(SELECT|INSERT\s+INTO|DELETE\s+FROM|UPDATE\s+\w+\s+SET|PRAGMA)\b')


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
        typed_reader = relative.split("/")[0] in TYPED_RESULTS_READERS
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if typed_reader:
                found.extend(sql_use(relative, number, line))
            match = INCLUDE.match(line)
            if not match or "/" not in match.group(1):
                continue  # a file of the same folder
            target = layer_of(match.group(1))
            if target is None or target in allowed_for(layer):
                continue
            found.append(f"{relative}:{number}: includes {match.group(1)}, but {layer}/ may "
                         f"include only {', '.join(sorted(allowed_for(layer)))}")
    return found


def sql_use(relative, number, line):
    """What a line of reports/ or runner/ does with SQLite directly, as messages (none: nothing)."""
    sqlite = SQLITE_INCLUDE.match(line)
    if sqlite:
        return [f"{relative}:{number}: includes {sqlite.group(1)}, but {relative.split('/')[0]}/ "
                f"reads results only through results/' typed queries (results/run_queries.h)"]
    sql = SQL_TEXT.search(line)
    if sql:
        return [f"{relative}:{number}: SQL text ({sql.group(1)}), but "
                f"{relative.split('/')[0]}/ reads results only through results/' typed queries "
                f"(results/run_queries.h)"]
    return []


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    root = root.resolve()
    if not (root / "CMakeLists.txt").is_file():
        sys.exit(f"check_layers: {root} is not Cedar's source tree (no CMakeLists.txt)")
    found = violations(root)
    for line in found:
        print(line)
    print(f"check_layers: {len(found)} include(s) or SQL text(s) against the layers in {root}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
