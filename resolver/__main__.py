"""``python -m resolver``: the same as the ``resolve`` command."""
import sys

from .entry import main

sys.exit(main())
