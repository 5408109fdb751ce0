"""zatile: an open, synthesizable RTL model of an Arm-SME-style matrix tile unit, and its software.

The layers, bottom to top (docs/architecture.md): :mod:`zatile.sw.arch` (the vocabulary),
:mod:`zatile.hw` (Amaranth components) and :mod:`zatile.sim` (reference model, oracles), then
:mod:`zatile.tb` (cocotb verification and the RTL backend), then the rest of :mod:`zatile.sw`
(driver, kernel model, CLI).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("zatile")
except PackageNotFoundError:                       # a source tree that is not installed
    __version__ = "0+unknown"
