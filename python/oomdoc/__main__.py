"""The ``oomdoc`` command (the Rust CLI compiled into the extension): ``python -m oomdoc``."""

import sys

from . import _core


def main() -> None:
    sys.stdout.flush()
    sys.exit(_core.cli_main(["oomdoc", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
