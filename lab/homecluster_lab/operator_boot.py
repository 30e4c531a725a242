"""`python -m homecluster_lab.operator_boot run ...`: `homecluster run` as its image runs it, from the lab's
shared virtualenv.

The controller image installs the product alone (images/controller/Containerfile). The lab's virtualenv also
holds `kubernetes` (the collection's node modules) and `kubernetes_asyncio` (the lab's nodes), and kopf imports
either client whenever it is importable, only to recognise that client's objects in a handler's return value
(kopf._cogs.helpers.thirdparty) -- objects our handlers never return. Importing them costs each operator start
about 0.5 s of CPU, more than the rest of its imports together, and the suite starts a few hundred operators.
Here they are made unimportable before the product is, as they are in the image: kopf falls back to the
placeholders it uses whenever they are not installed. Nothing else changes: the product's own `main`
reads the rest of the command line.
"""
from __future__ import annotations

import sys

# the client libraries kopf imports when present and the controller image does not install
NOT_IN_THE_IMAGE = ("kubernetes", "kubernetes_asyncio", "pykube")


def hide(modules: tuple[str, ...] = NOT_IN_THE_IMAGE) -> None:
    """Make `modules` unimportable in this process (an ImportError, as when they are not installed); one that
    is already imported stays."""
    for name in modules:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    hide()
    from homecluster.cli import main as product_main

    return product_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
