"""Makes the shared helpers of the estimation tests (``estimation_helpers``) importable."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:  # also under --import-mode=importlib
    sys.path.insert(0, str(_HERE))
