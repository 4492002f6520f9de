"""``python -m duraguard``: the command line, ended with ``os._exit``.

The SDK can abort at interpreter exit after a successful run (sdk-python issue 300), so the
process ends here, after flushing, instead of through interpreter shutdown.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from .cli import main


def run() -> NoReturn:
    """Run the CLI and end the process with its exit code (also fit as a console script)."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
