"""allocsites: call-site allocation profiles of USDT-annotated allocators."""

# The command's version (allocsites --version); the JSON report carries
# its own format version (jsonout.VERSION).
__version__ = "0.27"

import os as _os

# The directory holding this package: the entry scripts (allocsites,
# allocsites.py) are there, and where make install puts them, the built
# programs (allocsites-read, allocsites-sweep) too.
SCRIPTS_DIR = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
