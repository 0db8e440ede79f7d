"""``python -m memory_assets.cli``: the ``memory`` command."""

import sys

from memory_assets.cli.main import main

sys.exit(main())
