"""``python -m experiments [NAME] [--reps N] [--seed S] [--out DIR] [--quick]``."""
import sys


def main(argv=None) -> int:
    from experiments._runner import main as _main

    return _main(argv, restart=True)


if __name__ == "__main__":
    sys.exit(main())
