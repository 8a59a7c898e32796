"""``import oomdoc.auto`` installs the exception hook (same as ``oomdoc.install()``)."""

from . import install as _install

_install()
