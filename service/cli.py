"""The `invoicing` command (placeholder until the operator surface lands)."""

import sys


def main(argv: list[str] | None = None) -> int:
    print("invoicing: not yet", file=sys.stderr)
    return 1
