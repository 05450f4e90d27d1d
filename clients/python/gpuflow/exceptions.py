"""gpuflow.exceptions: CuPy's ``cupy.exceptions``, the NumPy exception and
warning classes gpuflow raises (``numpy.exceptions``' own classes, so
``except numpy.exceptions.AxisError`` and ``except gf.exceptions.AxisError``
catch the same errors)."""

import numpy as _np

_NS = getattr(_np, "exceptions", _np)  # numpy.exceptions is NumPy >= 1.25's

AxisError = _NS.AxisError
ComplexWarning = _NS.ComplexWarning
VisibleDeprecationWarning = _NS.VisibleDeprecationWarning
TooHardError = _NS.TooHardError
RankWarning = getattr(_NS, "RankWarning", getattr(_np, "RankWarning", UserWarning))
ModuleDeprecationWarning = getattr(_NS, "ModuleDeprecationWarning",
                                   getattr(_np, "ModuleDeprecationWarning", DeprecationWarning))


class _DTypePromotionError(TypeError):
    """NumPy >= 1.25's DTypePromotionError (a TypeError), for an older numpy."""


DTypePromotionError = getattr(_NS, "DTypePromotionError", _DTypePromotionError)

__all__ = ["AxisError", "ComplexWarning", "DTypePromotionError", "ModuleDeprecationWarning",
           "RankWarning", "TooHardError", "VisibleDeprecationWarning"]
