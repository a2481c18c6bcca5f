"""Exports Python-written compressors for the tests: runs each source file as `python SRC OUT.pt`
would (its __main__ block scripts its module and saves it to sys.argv[1]), all in one process.

    export_scripts.py OUT_DIR SRC.py...      writes OUT_DIR/<stem>.pt for each SRC.py
"""
import os
import runpy
import sys
import warnings


def main():
    out_dir, sources = sys.argv[1], sys.argv[2:]
    warnings.filterwarnings("ignore")  # torch.jit.script's deprecation notice
    for src in sources:
        out = os.path.join(out_dir, os.path.splitext(os.path.basename(src))[0] + ".pt")
        sys.argv = [src, out]
        runpy.run_path(src, run_name="__main__")
        if not os.path.isfile(out):
            sys.exit(f"{src} wrote no {out}")


if __name__ == "__main__":
    main()
