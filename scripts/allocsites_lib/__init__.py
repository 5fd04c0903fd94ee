"""allocsites: call-site allocation profiles of USDT-annotated allocators."""

# The command's version (allocsites --version); the JSON report carries
# its own format version (jsonout.VERSION).
__version__ = "0.27"
