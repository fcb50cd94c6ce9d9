"""`gpumem-tui` and `python -m gpumem_tui` run the command line (`cli.program`), the garbage collector off
from the first import: loading the command line makes thousands of objects and no garbage, and collecting
over them 20 times cost about 2 ms of every command (cli/lazy.py turns it on once a command's code is in)."""

import gc


def main() -> int:
    gc.disable()
    from gpumem_tui.cli import program

    return program()


if __name__ == "__main__":
    raise SystemExit(main())
