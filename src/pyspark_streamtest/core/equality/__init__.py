"""Value equality, the public assertion and what it is made of: a comparison made once
(``_compare``: the options, the tolerances, how expected values pair with actual ones,
every difference and its off-by amount) into an immutable outcome (``_outcome``), which
``_diff`` renders side by side and decides nothing, each value's text from ``_shown``.
The rooms above import what this door lists, never its modules."""

from ...errors import hide_our_frames
from ._assert import OutputMismatchError, assert_values_equal
from ._assert import compare_values as compare_values  # lent to the rooms above
from ._compare import Comparison as Comparison  # lent to the rooms above

__tracebackhide__ = hide_our_frames

__all__ = ["OutputMismatchError", "assert_values_equal"]
