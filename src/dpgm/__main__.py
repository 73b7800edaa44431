"""``python -m dpgm``: the ``dpgm`` command."""

import sys

from dpgm.cli import main

sys.exit(main())
