"""The installed version of this client, read once from the package metadata."""

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("sepp-py")
except PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "0.2.0"
