"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.core.features`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .core.features import (
    Feature as Feature,
)
from .core.features import (
    UnsupportedFeatureError as UnsupportedFeatureError,
)
from .core.features import (
    as_feature as as_feature,
)
from .core.features import (
    require_feature as require_feature,
)
from .core.features import (
    supported_features as supported_features,
)
from .errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = [
    "Feature",
    "UnsupportedFeatureError",
    "require_feature",
    "supported_features",
]
