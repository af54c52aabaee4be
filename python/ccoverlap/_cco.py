"""The `cco` command of a pip-installed ccoverlap: runs the binary packed in the wheel
(ccoverlap/_prefix/bin/cco), which finds its libraries and workloads beside it."""
import os
import sys


def main() -> None:
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_prefix", "bin", "cco")
    if not os.access(exe, os.X_OK):
        sys.stderr.write(f"cco: error: this ccoverlap has no cco binary ({exe} is missing): it was not "
                         "installed from a wheel that pip built (pip install --no-build-isolation .)\n")
        sys.exit(2)
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
