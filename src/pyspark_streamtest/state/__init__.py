"""Read-only views of a query's state stores, and a description of its stateful operators.

Views are made by the driver (:meth:`TopologyTestDriver.get_state_store
<pyspark_streamtest.TopologyTestDriver.get_state_store>` and its typed helpers) from
Spark's state data source (PySpark 4.0 and later). A view is a snapshot: the state as
of the end of one committed batch, read once, in plain Python. Reading state runs a
small batch job over the checkpoint's files; it never changes the query.

**Keys and values.** A store's key is a struct of the grouping columns: a view gives it
as the bare value when it has one column (``"alice"``) and as a tuple otherwise
(``("alice", "/home")``), so ``get("alice")`` and ``get(("alice", "/home"))`` read
naturally. ``get`` also accepts a dict by column name. Values are dicts by column name
(structs as dicts, timestamps timezone-aware UTC), as output rows are. Window and
session stores take the window out of the key: their entries carry a :class:`Window`.

**Several values per key.** A stream-stream join buffers every row of a key, and
``transformWithState`` list and map state hold several entries per key: there
``get(key)`` raises and ``get_all(key)`` returns them all.
"""

from ..errors import hide_our_frames
from .views import (
    OperatorDescription,
    QueryDescription,
    StateEntry,
    StateStoreView,
    StateVariableDescription,
    TopologyDescription,
    Window,
    WindowStoreView,
)

__tracebackhide__ = hide_our_frames

__all__ = [
    "OperatorDescription",
    "QueryDescription",
    "StateEntry",
    "StateStoreView",
    "StateVariableDescription",
    "TopologyDescription",
    "Window",
    "WindowStoreView",
]
