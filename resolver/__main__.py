"""``python -m resolver``: the same as the ``resolve`` command."""
import sys

from .cli import main

sys.exit(main())
