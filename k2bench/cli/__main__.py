"""``python -m k2bench.cli``: the k2bench command."""
import sys

from . import main

sys.exit(main())
